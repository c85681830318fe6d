import HeraldWire

/// Whether state changes may be applied now: the data folder's health and how many bytes of
/// changes still wait to be written.
///
/// Why refuse before applying rather than undo afterwards: a change the broker applies is
/// visible at once (its event goes out, `get` returns it, history keeps it), and there is
/// no clean way to take that back. So while the writer reports a fault (a full disk), and
/// while `max_writer_queue_bytes` of changes wait for it, a new change is refused with
/// `unavailable` before anything changes, and memory stays bounded by that figure.
struct DataFolderGate {
    /// Why the writer cannot write ("data folder full"), or nil while it can.
    var fault: String?
    /// Bytes the writer holds unwritten, as it last reported.
    var writerBytes = 0
    /// Bytes of records emitted since they were last handed to the writer.
    var pendingBytes = 0
    /// Whether shutdown has begun: held answers that cannot be written then end with
    /// `shutting_down` instead of waiting.
    var isStopping = false

    /// The error refusing a change of `bytes`, or nil when it may be applied.
    ///
    /// A change bigger than the whole bound still goes through when nothing waits, so
    /// `max_writer_queue_bytes` below `max_value_bytes` slows large values, never bars them.
    /// - Parameters:
    ///   - bytes: the change's `StateRecord.logBytes`.
    ///   - limit: `max_writer_queue_bytes`.
    /// - Returns: `unavailable` with the reason, or nil.
    func refusal(adding bytes: Int, limit: Int) -> HeraldError? {
        if let fault { return HeraldError(.unavailable, fault + "; changes are refused until it can be written again") }
        let waiting = writerBytes + pendingBytes
        guard waiting > 0, waiting + bytes > limit else { return nil }
        return HeraldError(.unavailable, "data folder behind: max_writer_queue_bytes of changes wait to be written")
    }
}
