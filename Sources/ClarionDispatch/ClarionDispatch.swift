/// The durable fan-out dispatcher: shards, leases, workers, retries and delivery accounting.
public enum ClarionDispatch {}
