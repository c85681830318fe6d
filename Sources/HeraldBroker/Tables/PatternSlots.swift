/// The subscription index's table from pattern to `SubscriptionIndex.Slot`: a sharded set of
/// the slots themselves, hashed and compared by their pattern, so a slot costs one 8-byte
/// reference and no key of its own.
///
/// Why not `NameTable<Slot>`: each of its slots held a key (the pattern array, 8 bytes) and
/// the value (8 bytes) at 50-75% load, about 16 bytes more per subscribed channel
/// (docs/architecture.md, "Memory per subscription"). Lookups go through a `.probe` slot that
/// hashes and compares the way a stored one does. Sharded like `NameTable`, so growing it
/// never rehashes more than a 64th of it at once.
struct PatternSlots {
    private var slots = ShardedSet<SubscriptionIndex.Slot>()

    /// How many patterns it holds.
    var count: Int { slots.count }

    /// The slot for `pattern`; setting nil removes it, setting a slot stores it under its
    /// own pattern (which must be `pattern`).
    subscript(pattern: [UInt8]) -> SubscriptionIndex.Slot? {
        get { slots.member(equalTo: .probe(pattern)) }
        set {
            guard let newValue else {
                slots.removeMember(equalTo: .probe(pattern))
                return
            }
            assert(newValue.pattern == pattern, "a slot is stored under its own pattern")
            slots.update(with: newValue)
        }
    }

    /// Every pattern held, in no particular order.
    var keys: [[UInt8]] { slots.elements.map(\.pattern) }
}
