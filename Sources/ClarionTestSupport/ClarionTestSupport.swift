/// Shared by the test targets and the load test: a PostgreSQL cluster per test run, fresh databases.
public enum ClarionTestSupport {}
