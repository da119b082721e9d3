"""Clients of Ray itself: the dashboard Jobs and Serve APIs."""
