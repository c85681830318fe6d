/// One connection's subscriptions by name: a set of the subscriptions themselves, hashed
/// and compared by name, so the table stores one reference per slot and no name of its own.
///
/// Why not `[[UInt8]: Subscription]`: its key was an array per subscription (48 bytes, now
/// packed into the subscription, `PackedName`) and each slot held a key and a value (16
/// bytes at 50-75% load); here a slot is 8 bytes. Lookups by name go through a probe
/// element that hashes and compares the way a stored subscription does.
struct SessionSubscriptions {
    /// A stored subscription, or a name being looked up; 8 bytes either way.
    private enum Member: Hashable {
        case held(Subscription)
        case probe([UInt8])

        func hash(into hasher: inout Hasher) {
            switch self {
            case .held(let subscription):
                subscription.hashName(into: &hasher)
            case .probe(let name):
                let word = PackedName.word(name)
                if word != 0 { return hasher.combine(word) }
                name.withUnsafeBytes { hasher.combine(bytes: $0) }
            }
        }

        static func == (a: Member, b: Member) -> Bool {
            switch (a, b) {
            case (.held(let x), .held(let y)): return x === y || x.hasSameName(as: y)
            case (.held(let x), .probe(let name)), (.probe(let name), .held(let x)): return x.hasName(name)
            case (.probe(let x), .probe(let y)): return x == y
            }
        }

        var subscription: Subscription? {
            if case .held(let subscription) = self { return subscription }
            return nil
        }
    }

    private var members: Set<Member> = []

    /// How many subscriptions it holds.
    var count: Int { members.count }

    /// Whether it holds none.
    var isEmpty: Bool { members.isEmpty }

    /// The subscription named `name`. Setting one stores it under its own name (which must
    /// be `name`), replacing the one held under that name; setting nil removes it.
    subscript(name: [UInt8]) -> Subscription? {
        get {
            guard let at = members.firstIndex(of: .probe(name)) else { return nil }
            return members[at].subscription
        }
        set {
            guard let newValue else {
                members.remove(.probe(name))
                return
            }
            assert(newValue.hasName(name), "a subscription is stored under its own name")
            members.update(with: .held(newValue))
        }
    }

    /// Every subscription, in no particular order.
    var values: [Subscription] { members.compactMap(\.subscription) }

    /// Marks every subscription inactive (it receives nothing more) and lists them, in one
    /// pass, as the teardown queue takes them (`DeferredUnindexing`).
    func retireAll() -> [Subscription?] {
        var all: [Subscription?] = []
        all.reserveCapacity(members.count)
        for member in members {
            guard case .held(let subscription) = member else { continue }
            subscription.isActive = false
            all.append(subscription)
        }
        return all
    }

    /// Forgets every subscription.
    mutating func removeAll() {
        members.removeAll()
    }
}
