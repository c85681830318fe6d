/// What the server does when a subscriber's outbound queue passes `max_pending` bytes.
///
/// The raw value is the spelling used in the config file.
public enum SlowConsumerPolicy: String, Sendable, CaseIterable {
    /// Close the connection with `slow_consumer`: the client learns it lost messages.
    case disconnect
    /// Drop new messages for that connection until it catches up; the connection stays open.
    case drop
}
