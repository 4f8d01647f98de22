"""What the SQL stores (SQLite, PostgreSQL, MySQL) share: time and JSON columns, row mapping."""
