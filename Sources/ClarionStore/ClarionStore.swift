/// PostgreSQL through libpq.
public enum ClarionStore {}
