/// The HTTP/1.1 API: SNS-compatible Query API, native JSON API, registration, events and beacons.
public enum ClarionAPI {}
