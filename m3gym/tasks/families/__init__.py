"""Built-in task families; importing this package registers them all."""
