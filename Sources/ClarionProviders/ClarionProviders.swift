/// Provider adapters: APNs, FCM HTTP v1 and ADM credentials, token sources, requests and outcomes.
public enum ClarionProviders {}
