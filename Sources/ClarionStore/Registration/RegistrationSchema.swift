extension Schema {
    /// The public event collector's settings per mobile app (issue "Hardening", finding 3; docs/security.md).
    ///
    /// `events_require_api_token`: every event must present one of the app's API tokens (off: the collector stays
    /// public, as the mobile SDK expects). `events_require_api_token_for_user_change`: an event may move a device
    /// token already bound to one `user_id` to another only with an API token; on for every app, existing ones
    /// included, because the unguarded move let anyone redirect a user's pushes.
    static let eventCollectorSettings = """
        ALTER TABLE mobile_apps ADD COLUMN events_require_api_token boolean NOT NULL DEFAULT false,
            ADD COLUMN events_require_api_token_for_user_change boolean NOT NULL DEFAULT true;
        """
}
