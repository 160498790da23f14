/// Endpoint attributes Clarion adds to SNS's, named once for every layer that reads or writes them (the API's
/// endpoint and registration routes, the registration processor, the publish path's quiet hours).
public enum EndpointAttribute {
    /// The device's IANA time zone (`Europe/Paris`): quiet hours and local-time sends are judged in it.
    public static let timeZone = "TimeZone"
}
