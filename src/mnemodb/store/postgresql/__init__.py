"""The PostgreSQL store, being built: today its connections and schema lifecycle
(`database.PostgresDatabase`). `open_store` offers it once it meets the whole contract."""
