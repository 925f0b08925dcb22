"""Other memory servers' file formats: reading them into the engine and writing them back."""
