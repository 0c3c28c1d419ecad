"""What kfdguard shows the outside: the bus names (defined once) and, later, the reports and the client."""
