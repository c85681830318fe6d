/// The owners of mirrored rows in cluster mode (docs/cluster.md, "Modules and who owns
/// what"): a global client id is `node << 32 | local`, so the node of every lock, link or
/// handler is read from its owner, written here once.
public enum ClusterOwner {
    /// The node index of a global client id (its top 32 bits).
    public static func node(of owner: ConnectionID) -> Int { owner >> 32 }
}
