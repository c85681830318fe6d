/// One named number of the `stats` op, e.g. `msgs_in` = 42.
///
/// The `stats` op and the HTTP monitor (`/varz`, `/metrics`) read the same list, so the
/// two can never disagree about what the daemon counts.
public struct StatsFigure: Sendable, Equatable {
    /// The key as `stats` spells it (`msgs_in`).
    public let name: String
    /// The value at the moment it was read.
    public let value: Int

    /// Creates a figure.
    /// - Parameters:
    ///   - name: the `stats` key.
    ///   - value: its value.
    public init(_ name: String, _ value: Int) {
        self.name = name
        self.value = value
    }
}
