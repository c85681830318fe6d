// The channels workload: many concrete channels with one subscriber each, spread over K
// connections, plus one wildcard subscriber, and one publisher going round-robin over the
// channels. At 100,000 channels the subscribe phase and the broker's memory per channel
// matter as much as the rate (issue 35), so both are measured apart from the publishes.
#if canImport(Glibc)
import Glibc
#endif

/// What the channels workload measured besides the rate; the RSS fields are nil without `--pid`.
struct ChannelSetup {
    /// Channels with one subscriber each (the wildcard subscription not counted).
    var channels: Int
    /// Connections the channels' subscriptions were spread over (the wildcard has its own).
    var subConns: Int
    /// From the first subscribe request to the last confirmation, the wildcard's included.
    var subscribeSeconds: Double
    /// Every connection open (handshakes done), nothing subscribed yet.
    var rssBefore: Int?
    /// Every subscription confirmed, nothing published yet.
    var rssSubscribed: Int?
    /// Every publish delivered, subscriptions still held (what the broker keeps per channel
    /// after its first messages, e.g. heraldd's history).
    var rssDelivered: Int?

    /// RSS growth from subscribing, per channel.
    var bytesPerChannel: Double? { perChannel(rssSubscribed) }

    /// RSS growth from subscribing and publishing, per channel.
    var bytesPerChannelDelivered: Double? { perChannel(rssDelivered) }

    private func perChannel(_ after: Int?) -> Double? {
        guard let b = rssBefore, let a = after, channels > 0 else { return nil }
        return Double(a - b) / Double(channels)
    }
}

/// Subscribe requests per round trip: one request (Herald, NATS) or one command (Redis
/// SUBSCRIBE, MQTT SUBSCRIBE packet) per channel name, a batch of them, then the wait for
/// its confirmations (NATS: the batch's PING answered).
let channelsSubscribeBatch = 100

extension Runner {
    /// Channel i (`bench.c<i>`) is subscribed on connection i mod K; publish j goes to channel
    /// j mod C. Every connection is opened first, then the subscriptions are made and every
    /// one of them confirmed before the first publish, so the rate measures routing only.
    ///
    /// The publisher's frames are built up front, one per channel, and written back to back
    /// from one block (`Runner.publish`): the generator's cost per publish is the same at 10
    /// and at 100,000 channels, and the same for every protocol but for the frame's length.
    func channels() throws -> BenchResult {
        let names = (0..<o.channels).map { "bench.c\($0)" }
        let conns = o.subConns
        var subs: [Session<B.Parser>] = []
        for k in 0...conns { subs.append(try open(k, port: o.subscriberPort(k, default: port))) }
        let pub = try open(conns + 1, port: o.publisherPort(default: port))
        let frames = names.map { B.publishFrame(channel: $0, size: o.size) }

        let measuringRSS = o.pid != nil
        if measuringRSS { settle(0.2) }
        let rssBefore = try rss()
        let start = nowNs()
        var expected: [Int] = []
        for k in 0..<conns {
            let mine = Array(stride(from: k, to: o.channels, by: conns))
            var first = 0
            while first < mine.count {
                let end = min(mine.count, first + channelsSubscribeBatch)
                try subscribe(&subs[k], mine[first..<end].map { names[$0] }, firstSid: first + 1)
                first = end
            }
            expected.append(mine.reduce(0) { $0 + Self.publishes(toChannel: $1, channels: o.channels, count: o.count) })
        }
        try subscribe(&subs[conns], [B.wildcard], firstSid: 1)
        expected.append(o.count)
        let subscribeSeconds = Double(nowNs() &- start) / 1e9

        var rssSubscribed: Int?
        if measuringRSS {
            settle()
            rssSubscribed = try rss()
        }
        var rssDelivered: Int?
        let (delivered, secs) = try measure(subs: subs, expected: expected, pub: pub, frames: frames) {
            guard measuringRSS else { return }
            settle()
            rssDelivered = try rss()
        }
        let setup = ChannelSetup(channels: o.channels, subConns: conns, subscribeSeconds: subscribeSeconds,
                                 rssBefore: rssBefore, rssSubscribed: rssSubscribed, rssDelivered: rssDelivered)
        return BenchResult(proto: B.label, workload: "channels", subs: o.channels + 1, size: o.size, count: o.count,
                           expected: 2 * o.count, delivered: delivered, seconds: secs,
                           msgsPerSec: secs > 0 ? Double(delivered) / secs : 0, setup: setup)
    }

    /// Publishes of a round-robin run of `count` over `channels` that go to `channel`.
    static func publishes(toChannel channel: Int, channels: Int, count: Int) -> Int {
        count / channels + (channel < count % channels ? 1 : 0)
    }
}
