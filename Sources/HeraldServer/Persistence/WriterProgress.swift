/// What the state writer tells the loop each time it wakes it.
public struct WriterProgress: Sendable, Equatable {
    /// The highest log position whose answers may leave.
    public var ackable: Int
    /// Whether the writer wants a snapshot (cleared by reading it).
    public var wantsSnapshot: Bool
    /// Why the log cannot be written now ("data folder full"), or nil while it can.
    public var fault: String?
    /// Bytes of records queued and not yet written (`StateRecord.logBytes`), which
    /// `max_writer_queue_bytes` bounds.
    public var backlogBytes: Int
}
