"""Money: catalog rows, covering plans, the window and forecast, costs, break-even and the decision."""
