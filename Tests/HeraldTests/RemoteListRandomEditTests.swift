import Herald
import HeraldTestSupport
import Testing

/// The acceptance check for `RemoteList`: after random concurrent edits from several clients,
/// every mirror equals what `get` returns.
@Suite struct RemoteListRandomEditTests {
    /// A small seeded generator, so a failure can be replayed.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// One random edit; false when the daemon said `range` (the writer's mirror was behind
    /// another writer's shrinking splice), which is expected under concurrency.
    static func edit(_ list: RemoteList<Int>, choice: Int, count: Int, position: Int, remove: Int, value: Int) async -> Bool {
        do {
            switch choice {
            case 0, 1:
                try await list.append(value)
            case 2 where count > 0:
                try await list.assign(value, at: min(position, count - 1))
            default:
                try await list.splice(at: position, remove: min(remove, count - position), insert: [value, value + 1])
            }
            return true
        } catch {
            if case .server(let code, _, _) = error, code == "range" { return false }
            Issue.record("unexpected \(error)")
            return false
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func mirrorsEqualGetAfterRandomConcurrentEdits(seed: UInt64) async throws {
        let daemon = try TestDaemon()
        let channel = Channel("app", "random")
        let reader = try await connectedClient(daemon, name: "reader")
        defer { reader.close() }
        let mirror = try await reader.remoteList(Int.self, at: channel)
        var writers: [HeraldClient] = []
        for n in 0..<3 { writers.append(try await connectedClient(daemon, name: "writer\(n)")) }
        defer { for writer in writers { writer.close() } }

        try await withThrowingTaskGroup(of: Int.self) { group in
            for (n, writer) in writers.enumerated() {
                group.addTask {
                    var random = SplitMix(state: seed &* 31 &+ UInt64(n))
                    let list = try await writer.remoteList(Int.self, at: channel)
                    var applied = 0
                    for step in 0..<60 {
                        let count = list.current.value?.count ?? 0
                        let value = n * 1000 + step
                        let choice = Int.random(in: 0..<4, using: &random)
                        let position = Int.random(in: 0...max(0, count), using: &random)
                        let remove = Int.random(in: 0...2, using: &random)
                        if await Self.edit(list, choice: choice, count: count, position: position, remove: remove, value: value) {
                            applied += 1
                        }
                    }
                    return applied
                }
            }
            var total = 0
            for try await applied in group { total += applied }
            #expect(total > 100, "most edits applied")
        }
        let truth = try await reader.get([Int].self, at: channel)
        #expect(await eventually { mirror.current.rev == truth.rev })
        #expect(mirror.current.value == truth.value)
        for writer in writers {
            let theirs = try await writer.remoteList(Int.self, at: channel)
            #expect(theirs.current.value == truth.value)
        }
    }
}
