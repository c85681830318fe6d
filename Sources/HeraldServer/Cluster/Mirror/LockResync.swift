/// The script calls a node makes to register its locks again after an outage (or a lapse
/// of its liveness), pure so the rule is testable: first `lockResync`, which makes Redis's
/// record of the node's locks exactly what it holds and announces the differences; then one
/// `locks` `L` per owner with every record, announcing each lock in full. The differences
/// alone are not enough: a node that read its lock snapshot while this node's liveness key
/// had lapsed left this node's locks out (its snapshot is exact), and Redis's record, which
/// still has them, differs in nothing (`MirrorResyncTests`).
enum LockResync {
    /// One script call: the script's name and its arguments after the prefix.
    typealias Call = (script: String, arguments: [[UInt8]])

    /// The calls for node `node` holding `owned` (owners with no record are left out: to
    /// `lockResync` they are owners to drop).
    static func calls(node: Int, owned: [(owner: Int, records: [[UInt8]])]) -> [Call] {
        let node = Array(String(node).utf8)
        let holding = owned.filter { !$0.records.isEmpty }
        var resync = [node]
        for (owner, records) in holding {
            resync += [Array(String(owner).utf8), Array(String(records.count).utf8)] + records
        }
        var calls: [Call] = [("lockResync", resync)]
        for (owner, records) in holding {
            calls.append(("locks", [node, Array("L".utf8), Array(String(owner).utf8)] + records))
        }
        return calls
    }
}
