import HeraldWire

/// The options of a subscription that most subscriptions do not use: a queue group, bound
/// arguments, a delivery limit, a name too long to pack in a word (`PackedName`).
///
/// Kept out of line (one optional reference in `Subscription`) because a million plain
/// subscriptions would otherwise each carry about 64 bytes of empty fields.
final class SubscriptionExtras {
    /// The queue group name, when it is a group member.
    let group: [UInt8]?
    /// The raw JSON of its bound arguments, echoed with each event.
    let args: [UInt8]?
    /// The `max` it was created with.
    let max: Int?
    /// Deliveries left before it ends, or nil for unlimited.
    var remaining: Int?
    /// Its slot in its queue group's member list, for O(1) removal.
    var groupPosition = -1
    /// `,"args":RAW`, precomputed, or empty.
    let argsFragment: [UInt8]
    /// The subscription's name when it is longer than `PackedName.capacity`.
    let longName: [UInt8]?

    init(group: [UInt8]?, args: [UInt8]?, max: Int?, longName: [UInt8]?) {
        self.group = group
        self.longName = longName
        self.args = args
        self.max = max
        self.remaining = max
        var fragment: [UInt8] = []
        if let args {
            fragment.appendRaw(#","args":"#)
            fragment.append(contentsOf: args)
        }
        self.argsFragment = fragment
    }
}
