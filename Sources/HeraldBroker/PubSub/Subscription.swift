import HeraldWire

/// One subscription of one connection: a pattern, a name, and its delivery options.
///
/// A class because the index, the channel match caches and queue groups all refer to the
/// same subscription, and removal must be visible to all of them at once (`isActive`).
public final class Subscription {
    /// The connection that holds it, unretained (the broker's `sessions` table owns it).
    ///
    /// Delivery borrows it (`withSession`), so a delivery costs no retain or release.
    /// Safe because a session retires all its subscriptions (`isActive = false`) before it
    /// goes, every path that may hold a stale subscription checks `isActive` first, and the
    /// table lets go of a session only in `Broker.disconnect`, never during a fan-out
    /// (docs/architecture.md, "Who keeps a session alive during a fan-out").
    let owner: Unmanaged<Session>
    /// The connection that holds it.
    public var session: Session { owner.takeUnretainedValue() }
    /// Its name, unique within the connection (copied out of `nameWord` or `extras`).
    public var name: [UInt8] {
        nameWord != 0 ? PackedName.bytes(nameWord) : extras?.longName ?? []
    }
    /// The name packed in one word when it is 7 bytes or shorter (`PackedName`), else 0 and
    /// the name is in `extras`: most names are short (`s1`… from the daemon, `h1`… from the
    /// Swift client), and an array of its own cost 48 bytes a subscription.
    let nameWord: UInt64
    /// The pattern (or concrete channel) it listens on.
    public let pattern: [UInt8]
    /// Group, args, max and a name too long to pack: nil for a plain subscription, which is
    /// most of them, so it stays 64 bytes smaller (see `SubscriptionExtras`).
    private let extras: SubscriptionExtras?
    /// Events lost to the `drop` policy since its last delivery (saturating at `UInt32.max`).
    public internal(set) var dropped: Int {
        get { Int(droppedCount) }
        set { droppedCount = UInt32(clamping: newValue) }
    }
    /// Creation order across the broker; deliveries follow it.
    let serial: Int
    /// `dropped` and `entryPosition` in 4 bytes each, stored before the flags below (stored
    /// properties are laid out in declaration order): the object is 69 bytes, an 80-byte
    /// allocation, where two `Int`s made it 80 bytes, a 96-byte one (16 bytes a subscription:
    /// 16 MB a million). An index entry never holds 2^31 subscriptions (170 GB of them).
    private var droppedCount: UInt32 = 0
    private var entrySlot: Int32 = -1
    /// Whether `pattern` holds `*` or `>`.
    public let isWildcard: Bool
    /// A `compact:true` subscription: its events carry neither `sub` nor `from`.
    public let isCompact: Bool
    /// A `handle:true` subscription: offered signals, never plain events.
    public internal(set) var isHandler = false
    /// Cleared on removal so stale references in caches deliver nothing.
    public internal(set) var isActive = true
    /// Set while a `since` replay is still being sent (`ReplayCursor`): live events then
    /// reach it through the replay, in order, so it is left out of the channel's cached
    /// targets (`Channel.refreshTargets`) and of queue-group picks until it catches up.
    var isReplaying = false
    /// Set while some lock names this subscription by its global id, so the delivery
    /// check consults the lock table only for subscriptions a lock can concern.
    var isLockTarget = false
    /// Its slot in its index entry's array (`SubscriptionIndex`), for O(1) removal; -1 when
    /// it sits alone in its slot or is not indexed.
    var entryPosition: Int {
        get { Int(entrySlot) }
        set { entrySlot = Int32(clamping: newValue) }
    }

    /// The queue group name, when it is a group member.
    public var group: [UInt8]? { extras?.group }
    /// Its slot in its queue group's member list (`QueueGroup`), for O(1) removal.
    var groupPosition: Int {
        get { extras?.groupPosition ?? -1 }
        set { extras?.groupPosition = newValue }
    }
    /// The raw JSON of its bound arguments, echoed with each event.
    public var args: [UInt8]? { extras?.args }
    /// The `max` it was created with, for `subs`.
    public var max: Int? { extras?.max }
    /// Deliveries left before it ends, or nil for unlimited.
    public internal(set) var remaining: Int? {
        get { extras?.remaining }
        set { extras?.remaining = newValue }
    }
    /// `,"args":RAW`, precomputed, or empty.
    var argsFragment: [UInt8] { extras?.argsFragment ?? [] }
    /// `argsFragment.count`, without touching the array (read on every delivery).
    var argsFragmentCount: Int { extras?.argsFragment.count ?? 0 }

    /// Whether a fan-out may deliver to it from the cached session alone (`FastTarget`): no
    /// group, `args` or `max`, not a handler, nothing dropped to report.
    var isPlainTarget: Bool {
        remaining == nil && group == nil && argsFragmentCount == 0 && !isHandler && isActive && droppedCount == 0
    }

    init(session: Session, name: [UInt8], pattern: [UInt8], isWildcard: Bool, group: [UInt8]?,
         args: [UInt8]?, max: Int?, serial: Int, isCompact: Bool = false) {
        self.owner = Unmanaged.passUnretained(session)
        let word = PackedName.word(name)
        self.nameWord = word
        self.pattern = pattern
        self.isWildcard = isWildcard
        self.isCompact = isCompact
        self.serial = serial
        let plain = group == nil && args == nil && max == nil && word != 0
        self.extras = plain ? nil : SubscriptionExtras(group: group, args: args, max: max,
                                                        longName: word == 0 ? name : nil)
    }

    /// Calls `body` with its name's bytes, without allocating.
    @inline(__always)
    func withName<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        if nameWord != 0 { return PackedName.withBytes(nameWord, body) }
        return (extras?.longName ?? []).withUnsafeBytes(body)
    }

    /// Appends its name as a JSON string to `out`, without allocating.
    func appendQuotedName(to out: inout [UInt8]) {
        withName { out.appendJSONString($0) }
    }

    /// Whether its name is `bytes`.
    func hasName(_ bytes: [UInt8]) -> Bool {
        let word = PackedName.word(bytes)
        if word != 0 || nameWord != 0 { return word == nameWord }
        return extras?.longName == bytes
    }

    /// Whether `other` has the same name.
    func hasSameName(as other: Subscription) -> Bool {
        if nameWord != 0 || other.nameWord != 0 { return nameWord == other.nameWord }
        return extras?.longName == other.extras?.longName
    }

    /// Feeds its name to `hasher` the way `SessionSubscriptions` hashes a name it looks up:
    /// the packed word, or the bytes of a longer name in one call.
    func hashName(into hasher: inout Hasher) {
        if nameWord != 0 { return hasher.combine(nameWord) }
        (extras?.longName ?? []).withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// Runs `body` with the owning session borrowed: a +0 reference, so no retain and no
    /// release (the per-delivery cost this replaces was one pair per reference taken).
    @inline(__always)
    func withSession<Result>(_ body: (Session) -> Result) -> Result {
        owner._withUnsafeGuaranteedRef(body)
    }

    /// `"NAME"` as a JSON string. Computed, not stored: it is needed only when a channel's
    /// delivery targets are cached and in answers, and storing it cost ~50 B per subscription.
    var quotedName: [UInt8] {
        var quoted: [UInt8] = []
        appendQuotedName(to: &quoted)
        return quoted
    }

    /// The id other connections use for it: `CLIENT/NAME`.
    public var globalID: [UInt8] { session.clientID + [UInt8(ascii: "/")] + name }
}
