"""The `mnemodb` command line."""
