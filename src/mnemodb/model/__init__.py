"""The data model, at the bottom of mnemodb: records (`records`), change-log operations
(`ops`), errors, the validation rules every write path applies (`checks`, `rules`), ids
and times. It imports nothing of mnemodb from above; every other layer builds on it."""
