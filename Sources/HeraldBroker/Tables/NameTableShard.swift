import CPrefetch

/// One shard of a `NameTable`: open addressing with linear probing over one array of slots
/// (the name's hash, the name, the value), removal by shifting the run back (no tombstones),
/// at most 5/8 full.
///
/// A flood: with random hashes a probe run longer than `floodProbeLimit` at this load is
/// vanishingly rare (about e^-24 per run), so an insert that meets one means names were
/// chosen to collide; the shard then takes secrets of its own and rehashes, and from then on
/// its names are hashed a second time with them (only that shard, only after a flood).
struct NameTableShard<Value> {
    /// One slot: `hash` 0 when empty.
    struct Slot {
        var hash: UInt64
        var name: [UInt8]
        var value: Value?
    }

    /// A probe run this long at most 5/8 load means a flood.
    static var floodProbeLimit: Int { 256 }

    private(set) var slots: [Slot] = []
    /// How many names it holds.
    private(set) var count = 0
    /// Its own secrets, after a flood; nil: the table's.
    private(set) var ownHash: NameHash?
    /// How many times a flood made it take new secrets.
    private(set) var reseeds = 0

    /// How many names it holds before it must grow (5/8 of its slots).
    var capacity: Int { slots.count * 5 / 8 }

    /// The hash this shard places `bytes` by, given the table's `hash` of them.
    @inline(__always)
    func placement(_ hash: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard let ownHash else { return hash }
        return ownHash.hash(bytes)
    }

    /// The slot holding `bytes` (placed by `hash`), if any. Reads the slots in place
    /// (a slot copied out would retain its name and value: 140 instructions a lookup).
    @inline(__always)
    func find(_ bytes: UnsafeRawBufferPointer, hash: UInt64) -> Int? {
        slots.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return nil }
            let mask = buffer.count - 1
            var index = Int(truncatingIfNeeded: hash) & mask
            while true {
                let slot = base + index
                let stored = slot.pointee.hash
                if stored == 0 { return nil }
                if stored == hash && Self.equal(slot, bytes) { return index }
                index = (index + 1) & mask
            }
        }
    }

    /// The value stored under `bytes`, whose table hash is `hash`.
    @inline(__always)
    func lookup(_ bytes: UnsafeRawBufferPointer, hash: UInt64) -> Value? {
        guard let index = find(bytes, hash: placement(hash, bytes)) else { return nil }
        return slots.withUnsafeBufferPointer { $0[index].value }
    }

    /// Look-ahead (`PublishLookahead`): a hint to load the home slot of a name hashed to
    /// `hash` (the table's hash; a shard with secrets of its own is skipped).
    @inline(__always)
    func prefetchHome(_ hash: UInt64) {
        guard ownHash == nil else { return }
        slots.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
            herald_prefetch(base + (Int(truncatingIfNeeded: hash) & (buffer.count - 1)))
        }
    }

    /// Look-ahead: a hint to load the object of the value whose slot has `hash`, found by
    /// the hash alone (a wrong guess costs a wasted hint, nothing more). The value's
    /// reference is read as raw bits: reading it as a reference would retain it, a write
    /// to the very object whose miss the hint is to hide.
    @inline(__always)
    func prefetchValue(_ hash: UInt64) {
        guard ownHash == nil, let offset = MemoryLayout<Slot>.offset(of: \Slot.value) else { return }
        slots.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
            let mask = buffer.count - 1
            var index = Int(truncatingIfNeeded: hash) & mask
            for _ in 0..<4 {
                let stored = base[index].hash
                if stored == 0 { return }
                if stored == hash {
                    let bits = UnsafeRawPointer(base + index).load(fromByteOffset: offset, as: UInt.self)
                    if bits != 0, let object = UnsafeRawPointer(bitPattern: bits) { herald_prefetch(object) }
                    return
                }
                index = (index + 1) & mask
            }
        }
    }

    /// The value in slot `index`.
    func value(at index: Int) -> Value? { slots[index].value }

    /// Replaces the value in slot `index`. - Returns: the old one.
    mutating func replace(at index: Int, with value: Value) -> Value? {
        let old = slots[index].value
        slots[index].value = value
        return old
    }

    /// Adds `name` (absent) with `value`, placed by `hash`; grows first when `growNow`.
    mutating func insert(_ name: [UInt8], hash: UInt64, value: Value, growNow: Bool) {
        if slots.isEmpty || count + 1 > capacity || growNow { resize(to: max(16, slots.count * 2)) }
        let hash = ownHash.map { $0.hash(name) } ?? hash
        if place(Slot(hash: hash, name: name, value: value)) > Self.floodProbeLimit { reseed() }
        count += 1
    }

    /// Removes slot `index`, shifting the run behind it back. - Returns: its value.
    mutating func remove(at index: Int) -> Value? {
        let mask = slots.count - 1
        let removed = slots[index].value
        var hole = index
        var next = (index + 1) & mask
        while slots[next].hash != 0 {
            let home = Int(truncatingIfNeeded: slots[next].hash) & mask
            // The slot may move back into the hole unless its home lies after the hole.
            let distanceToHole = (hole - home) & mask
            let distanceToNext = (next - home) & mask
            if distanceToHole < distanceToNext {
                slots[hole] = slots[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = Slot(hash: 0, name: [], value: nil)
        count -= 1
        return removed
    }

    /// Every name and value.
    var entries: [(name: [UInt8], value: Value)] {
        slots.compactMap { slot in slot.value.map { (slot.name, $0) } }
    }

    /// Puts `slot` in the first free slot of its run. - Returns: how far it went.
    @discardableResult
    private mutating func place(_ slot: Slot) -> Int {
        let mask = slots.count - 1
        var index = Int(truncatingIfNeeded: slot.hash) & mask
        var distance = 0
        while slots[index].hash != 0 {
            index = (index + 1) & mask
            distance += 1
        }
        slots[index] = slot
        return distance
    }

    private mutating func resize(to size: Int) {
        let old = slots
        slots = Array(repeating: Slot(hash: 0, name: [], value: nil), count: size)
        for slot in old where slot.hash != 0 { place(slot) }
    }

    /// A flood: new secrets of its own, every name placed again by them.
    private mutating func reseed() {
        let hash = NameHash.random()
        ownHash = hash
        reseeds += 1
        let old = slots
        slots = Array(repeating: Slot(hash: 0, name: [], value: nil), count: slots.count)
        for var slot in old where slot.hash != 0 {
            slot.hash = hash.hash(slot.name)
            place(slot)
        }
    }

    /// Whether the slot's name is `bytes` (compared in place, 8 bytes at a time).
    @inline(__always)
    private static func equal(_ slot: UnsafePointer<Slot>, _ bytes: UnsafeRawBufferPointer) -> Bool {
        slot.pointee.name.withUnsafeBytes { own in
            let count = bytes.count
            guard own.count == count else { return false }
            var at = 0
            while count - at >= 8 {
                if own.loadUnaligned(fromByteOffset: at, as: UInt64.self) != bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self) {
                    return false
                }
                at += 8
            }
            while at < count {
                if own[at] != bytes[at] { return false }
                at += 1
            }
            return true
        }
    }
}
