"""Campaign: the rotated schedule of passes, resume, and the third series proposed from a campaign."""
