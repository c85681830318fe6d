import Testing
@testable import HeraldBroker

/// The channel-name table (`NameTable`, `NameTableShard`, `NameHash`; issue 35): every name
/// found after any mix of inserts and removals (removal shifts runs back, no tombstones), a
/// lookup by bytes equal to one by array, and a flood of colliding names costing a reseed of
/// one shard rather than a probe run per lookup.
@Suite struct NameTableTests {
    @Test func aMixOfInsertsAndRemovalsKeepsExactlyTheNamesAModelDictionaryKeeps() {
        var table = NameTable<Int>()
        var model: [[UInt8]: Int] = [:]
        var generator = SystemRandomNumberGenerator()
        for step in 0..<60_000 {
            let name = Array("room.\(Int.random(in: 0..<5_000, using: &generator))".utf8)
            if Bool.random(using: &generator) {
                table[name] = step
                model[name] = step
            } else {
                #expect(table.removeValue(forKey: name) == model.removeValue(forKey: name))
            }
        }
        #expect(table.count == model.count)
        for (name, value) in model { #expect(table[name] == value) }
        #expect(Set(table.keys) == Set(model.keys), "nothing kept that was removed")
        for n in 0..<5_000 where model[Array("room.\(n)".utf8)] == nil {
            #expect(table[Array("room.\(n)".utf8)] == nil)
        }
    }

    @Test func aLookupByBytesFindsWhatTheArrayFindsForEveryLength() {
        var table = NameTable<Int>()
        let names = (0..<64).map { length in (0..<length).map { UInt8(97 + ($0 * 7 + length) % 26) } }
        for (index, name) in names.enumerated() { table[name] = index }
        for (index, name) in names.enumerated() {
            #expect(name.withUnsafeBytes { table[bytes: $0] } == index, "length \(name.count)")
        }
        #expect(Array("zzz-not-there".utf8).withUnsafeBytes { table[bytes: $0] } == nil)
    }

    @Test func namesThatDifferOnlyInOneByteOrInLengthHashApart() {
        let hash = NameHash.processWide
        let base = Array("app.settings.profile.0001".utf8)
        var seen: Set<UInt64> = [hash.hash(base)]
        for index in base.indices {
            var changed = base
            changed[index] ^= 1
            seen.insert(hash.hash(changed))
        }
        for length in 0..<base.count { seen.insert(hash.hash(Array(base.prefix(length)))) }
        #expect(seen.count == 1 + base.count * 2, "no two of them share a hash")
    }

    /// 10,000 names forced onto one hash (what a flood of chosen names would do): the shard
    /// takes secrets of its own once a probe run passes the limit, and every name is still
    /// found, removed and found gone.
    @Test func aFloodOfCollidingNamesMakesTheShardReseedAndEveryNameStaysFound() {
        var shard = NameTableShard<Int>()
        let names = (0..<10_000).map { Array("flood.\($0)".utf8) }
        for (index, name) in names.enumerated() {
            let found = name.withUnsafeBytes { shard.find($0, hash: shard.placement(42, $0)) }
            #expect(found == nil)
            shard.insert(name, hash: 42, value: index, growNow: false)
        }
        #expect(shard.reseeds >= 1)
        #expect(shard.count == names.count)
        for (index, name) in names.enumerated() where index % 7 == 0 {
            #expect(name.withUnsafeBytes { shard.lookup($0, hash: 42) } == index)
        }
        for name in names.prefix(5_000) {
            if let slot = name.withUnsafeBytes({ shard.find($0, hash: shard.placement(42, $0)) }) { _ = shard.remove(at: slot) }
        }
        #expect(shard.count == 5_000)
        #expect(names.prefix(5_000).allSatisfy { name in name.withUnsafeBytes { shard.lookup($0, hash: 42) } == nil })
        #expect(names.suffix(5_000).enumerated().allSatisfy { offset, name in
            name.withUnsafeBytes { shard.lookup($0, hash: 42) } == 5_000 + offset
        })
    }
}
