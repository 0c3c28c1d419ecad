"""What kfdguard shows the outside: the bus names (defined once), the reports (text and JSON), the bus client."""
