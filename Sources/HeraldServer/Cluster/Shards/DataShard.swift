import CLibUV

/// A Redis primary after the first (`cluster.shards`, issue 33; docs/architecture.md,
/// "Several Redis primaries"): the channels `ShardMap` places here keep their data here, and
/// their publishes and state ops run here. The node holds two links to it: `commands` (the
/// data-path scripts, one pipelined batch per loop pass) and `messages` (its own node
/// channel, where this shard's scripts publish the events meant for this node).
///
/// The cluster's own records (nodes, interest, locks, links, handlers, leases) stay on the
/// first shard, whose links the engine holds itself: losing this shard makes only its
/// channels `unavailable`.
final class DataShard {
    /// The shard's place in `cluster.shards` (1 or more).
    let index: Int
    /// Script calls and the liveness copy.
    let commands: RedisLink
    /// The subscription to this node's channel on this shard.
    let messages: RedisLink
    /// Follows this shard's primary under its own sentinels (`PrimaryFollower`).
    let follower: PrimaryFollower?
    /// The SHAs the scripts were loaded under on the current connection, nil until all are.
    var loadedScripts: [String: [UInt8]]?
    /// Whether the node channel subscription is confirmed on the current connection.
    var isSubscribed = false
    /// Whether the shard served before (a comeback resumes its channels' `seq`s).
    var wasReady = false
    /// A script load under way (its connection's generation), so a reload is not doubled.
    var loadingGeneration: Int?
    /// Counts the command link's connections, so an answer from an older one is ignored.
    var generation = 0
    /// The channels' delivered `seq`s taken when the node channel was subscribed again after
    /// the shard had served (a restart or a failover): their live events are held from that
    /// moment, so one that arrives before the shard serves again cannot hide the ones missed
    /// meanwhile; the `resume` calls go out with these points once it serves.
    var pendingResume: [(channel: [UInt8], seq: Int, wanted: Bool)]?

    /// Whether calls routed here can run: both links up, the scripts loaded, the node
    /// channel subscribed.
    var isReady: Bool {
        loadedScripts != nil && isSubscribed && commands.isConnected && messages.isConnected
    }

    /// Links to `shard` (not started).
    init(index: Int, shard: ClusterShard, logger: Logger, loop: UnsafeMutablePointer<uv_loop_t>) {
        self.index = index
        let commands = RedisLink(host: shard.host, port: shard.port, loop: loop)
        let messages = RedisLink(host: shard.host, port: shard.port, loop: loop)
        self.commands = commands
        self.messages = messages
        for link in [commands, messages] { link.credentials = shard.credentials }
        follower = shard.sentinel.map { sentinel in
            PrimaryFollower(sentinel, name: "shard \(index)", commands: commands, messages: messages, links: [commands, messages],
                            credentials: shard.credentials, logger: logger, loop: loop)
        }
    }

    /// Where the command link is connected, for logs.
    var address: String { "\(commands.host):\(commands.port)" }

    /// Closes both links (the loop is stopping).
    func close() {
        commands.close()
        messages.close()
        follower?.close()
    }
}
