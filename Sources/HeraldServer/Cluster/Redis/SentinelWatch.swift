import CLibUV

/// Hears failovers as the sentinels announce them (issue 31, docs/cluster.md "Failover and
/// fail-stop"): a pub/sub connection to every sentinel, subscribed to the notices that
/// matter, so a node learns of a failover within milliseconds of the sentinel rather than at
/// its next poll, and every node learns of it at about the same moment.
///
/// Handle rules as `RedisLink`: only the loop's thread calls it; `close` closes its links.
final class SentinelWatch {
    /// What a sentinel announced about the watched master.
    enum Notice: Equatable {
        /// `+failover-state-send-slaveof-noone`: a replica is about to be promoted; the
        /// primary at `primary` will stop being the cluster's.
        case promoting(primary: RedisAddress)
        /// `+switch-master`: the primary moved from `from` to `to`.
        case switched(from: RedisAddress, to: RedisAddress)
        /// `-failover-abort-*`: the failover under way ended without a switch.
        case aborted
    }

    /// The channels subscribed on every sentinel.
    static let channels = ["+switch-master", "+failover-state-send-slaveof-noone", "-failover-abort-not-elected",
                           "-failover-abort-no-good-slave", "-failover-abort-slave-timeout"]

    /// Called with each notice about the watched master (every sentinel sends its own).
    var onNotice: ((Notice) -> Void)?
    private let master: String
    private var links: [RedisLink] = []

    /// A watch over the sentinels of `settings`, on `loop`; nothing connects before `start`.
    init(_ settings: SentinelSettings, loop: UnsafeMutablePointer<uv_loop_t>) {
        master = settings.master
        for address in settings.addresses {
            let link = RedisLink(host: address.host, port: address.port, loop: loop)
            link.credentials = settings.credentials
            link.onConnect = { [unowned self, unowned link] in
                link.subscribe(Self.channels.map { Array($0.utf8) }) { [unowned self] reply in heard(reply) }
            }
            links.append(link)
        }
    }

    /// Connects to every sentinel (each reconnects with backoff when it goes).
    func start() {
        for link in links { link.start() }
    }

    /// Disconnects for good.
    func close() {
        for link in links { link.close() }
    }

    private func heard(_ reply: RedisReply) {
        guard let parts = reply.elements, parts.count == 3, parts[0].bytes == Array("message".utf8),
              let channel = parts[1].bytes, let payload = parts[2].bytes,
              let notice = Self.notice(channel: String(decoding: channel, as: UTF8.self),
                                       payload: String(decoding: payload, as: UTF8.self), master: master) else { return }
        onNotice?(notice)
    }

    /// Reads a sentinel event about `master`; nil for another master or a malformed one.
    /// Payloads: `+switch-master NAME OLDIP OLDPORT NEWIP NEWPORT`;
    /// `+failover-state-send-slaveof-noone slave IP:PORT IP PORT @ NAME MASTERIP MASTERPORT`;
    /// `-failover-abort-… master NAME IP PORT`.
    static func notice(channel: String, payload: String, master: String) -> Notice? {
        let words = payload.split(separator: " ").map(String.init)
        switch channel {
        case "+switch-master":
            guard words.count == 5, words[0] == master, let from = address(words[1], words[2]),
                  let to = address(words[3], words[4]) else { return nil }
            return .switched(from: from, to: to)
        case "+failover-state-send-slaveof-noone":
            guard words.count == 8, words[4] == "@", words[5] == master, let primary = address(words[6], words[7]) else { return nil }
            return .promoting(primary: primary)
        default:
            guard channel.hasPrefix("-failover-abort-"), words.count >= 2, words[0] == "master", words[1] == master else { return nil }
            return .aborted
        }
    }

    private static func address(_ host: String, _ port: String) -> RedisAddress? {
        try? RedisAddress(parsing: host + ":" + port)
    }
}
