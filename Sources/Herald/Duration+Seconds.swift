extension Duration {
    /// The duration in seconds, as the client's timers and the wire's `timeout_ms` take it.
    var inSeconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// `seconds` as a duration for the deprecated `Double` forms, without trapping: NaN and
    /// values below zero become zero, values past a billion seconds are capped (the daemon
    /// clamps timeouts to an hour anyway).
    static func clamped(seconds: Double) -> Duration {
        guard seconds > 0 else { return .zero }
        return .seconds(min(seconds, 1e9))
    }
}
