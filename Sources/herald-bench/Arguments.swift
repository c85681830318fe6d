// Hand-written command-line parsing for herald-bench (no outside packages).

enum Proto: String, Sendable, CaseIterable {
    case herald, nats, redis, mqtt, sink
    case heraldCompact = "herald-compact"
    case heraldWebSocket = "herald-ws"
}

enum Workload: String, Sendable, CaseIterable {
    case fanout, channels, latency, rate, idle, subscriptions, set, ping

    /// Scale workloads measure the broker's memory and set-up time, not message rates.
    var isScale: Bool { self == .idle || self == .subscriptions }
}

struct Options: Sendable {
    var proto: Proto = .herald
    var host = "127.0.0.1"
    var port = 0
    var workload: Workload = .fanout
    var subs = 1
    var size = 16
    var count = 100_000
    var json = false
    /// channels workload: number of channels and of subscriber connections they are spread over.
    var channels = 1000
    var subConns = 10
    /// Whether --sub-conns was given (its default differs per workload).
    var subConnsGiven = false
    /// idle workload: connections to open and hold.
    var conns = 10_000
    /// subscriptions workload: distinct concrete channels subscribed in total.
    var subsTotal = 1_000_000
    /// Broker process whose RSS the scale workloads sample (/proc/PID/status VmRSS).
    var pid: Int32?
    /// idle timeout (seconds) that ends a measurement when deliveries stop.
    var idle = 2.0
    /// latency workload: unmeasured round trips first.
    var warmup = -1
    /// rate workload: messages per second.
    var rate = 10_000
    /// set workload: acknowledged sets in flight, and channels written round-robin.
    var window = 256
    var keys = 1000
    /// fanout, channels, latency: the port the publisher connects to (nil: `port`), so it
    /// can reach one node of a cluster while the subscribers reach others.
    var pubPort: Int?
    /// fanout, channels, latency: the ports subscriber connection k connects to, k modulo
    /// their count (empty: `port`).
    var subPorts: [Int] = []

    /// The port the publisher connects to, given the port the runner was started on.
    func publisherPort(default port: Int) -> Int { pubPort ?? port }

    /// The port subscriber connection `index` connects to: round robin over `subPorts`.
    func subscriberPort(_ index: Int, default port: Int) -> Int {
        subPorts.isEmpty ? port : subPorts[index % subPorts.count]
    }
}

let usageText = """
    usage: herald-bench --proto herald|herald-compact|herald-ws|nats|redis|mqtt|sink [--host 127.0.0.1] --port P
                        --workload fanout|channels|latency|idle|subscriptions
                        [--subs S] [--size BYTES] [--count N] [--json]
                        [--channels C] [--sub-conns K] [--idle SECONDS] [--warmup N] [--rate R]
                        [--conns N] [--subs-total N] [--pid PID]
                        [--window W] [--keys K] [--pub-port P] [--sub-ports P1,P2,...]

      --proto      broker protocol; `herald-compact` is herald with `compact:true` subscriptions,
                   `herald-ws` herald over its WebSocket listener (--port: the ws_port)
                   (events without `sub` and `from`); `sink` starts a built-in no-op server (Herald wire
                   format) in-process and measures the generator's own ceiling (--port ignored)
      --workload   fanout:   S subscribers on one channel, 1 publisher sending N messages
                   channels: C channels (default 1000) with one subscriber each, spread over
                             K connections (default 10), plus one wildcard subscriber;
                             N messages published round-robin over the channels, after
                             every subscription was confirmed; also reports the subscribe
                             time and, with --pid, the broker's RSS growth per channel
                   latency:  N sequential publish -> delivery round trips (p50/p99/p99.9)
                   rate:     N publishes at a fixed --rate R per second (default 10000),
                             each delivery timed against its send (p50/p99/p99.9)
                   idle:     open --conns N (default 10000) connections, each completing the
                             protocol handshake, and hold them: broker RSS per connection
                   subscriptions: subscribe to --subs-total N (default 1000000) distinct
                             channels bench.s.<i> over K connections (--sub-conns, default 4),
                             pipelined: time until all are confirmed, broker RSS per subscription
      --pid        broker process id; the scale workloads read its VmRSS before and after
                   (without it they report times only); channels reads it before subscribing,
                   after subscribing and after the deliveries
                   set:      N acknowledged `set`s (Herald only) over K channels (default
                             1000), W in flight (default 256); reports sets/s
                   ping:     N sequential PING -> PONG round trips (Redis only): the
                             broker's own round trip, p50/p99/p99.9
      --pub-port   fanout, channels, latency: the publisher connects to this port (default
                   --port), e.g. one node of a cluster
      --sub-ports  fanout, channels, latency: comma list of ports; subscriber connection k
                   connects to entry k mod count (default --port), e.g. the other nodes.
                   With both, --port may be left out. All on --host
      --size       payload bytes (Herald: the JSON `data` value including its quotes, >= 2)
      --json       also print one JSON object line with the result
      --idle       seconds without a delivery that end a measurement (default 2)
    """

struct UsageError: Error, CustomStringConvertible {
    let description: String
}

func parseArguments(_ args: [String]) throws -> Options {
    var o = Options()
    var portGiven = false
    var i = 0
    func value(_ name: String) throws -> String {
        i += 1
        guard i < args.count else { throw UsageError(description: "missing value for \(name)") }
        return args[i]
    }
    func int(_ name: String, min: Int) throws -> Int {
        let s = try value(name)
        guard let v = Int(s), v >= min else {
            throw UsageError(description: "\(name) needs an integer >= \(min), got '\(s)'")
        }
        return v
    }
    func ports(_ name: String) throws -> [Int] {
        let s = try value(name)
        let parts = s.split(separator: ",", omittingEmptySubsequences: false)
        var out: [Int] = []
        for part in parts {
            guard let v = Int(part), v >= 1, v <= 65535 else {
                throw UsageError(description: "\(name) needs a comma list of ports (1-65535), got '\(s)'")
            }
            out.append(v)
        }
        return out
    }
    while i < args.count {
        let a = args[i]
        switch a {
        case "--proto":
            let s = try value(a)
            guard let p = Proto(rawValue: s) else {
                throw UsageError(description: "unknown --proto '\(s)' (herald, herald-compact, herald-ws, nats, redis, mqtt, sink)")
            }
            o.proto = p
        case "--host": o.host = try value(a)
        case "--port":
            o.port = try int(a, min: 1)
            guard o.port <= 65535 else { throw UsageError(description: "--port out of range") }
            portGiven = true
        case "--workload":
            let s = try value(a)
            guard let w = Workload(rawValue: s) else {
                throw UsageError(description: "unknown --workload '\(s)' (fanout, channels, latency, rate, idle, subscriptions, set, ping)")
            }
            o.workload = w
        case "--subs": o.subs = try int(a, min: 1)
        case "--size": o.size = try int(a, min: 0)
        case "--count": o.count = try int(a, min: 1)
        case "--json": o.json = true
        case "--channels": o.channels = try int(a, min: 1)
        case "--sub-conns":
            o.subConns = try int(a, min: 1)
            o.subConnsGiven = true
        case "--conns": o.conns = try int(a, min: 1)
        case "--subs-total": o.subsTotal = try int(a, min: 1)
        case "--pid": o.pid = Int32(try int(a, min: 1))
        case "--warmup": o.warmup = try int(a, min: 0)
        case "--rate": o.rate = try int(a, min: 1)
        case "--window": o.window = try int(a, min: 1)
        case "--keys": o.keys = try int(a, min: 1)
        case "--pub-port":
            o.pubPort = try int(a, min: 1)
            guard let p = o.pubPort, p <= 65535 else { throw UsageError(description: "--pub-port out of range") }
        case "--sub-ports":
            o.subPorts = try ports(a)
        case "--idle":
            let s = try value(a)
            guard let v = Double(s), v > 0 else { throw UsageError(description: "--idle needs seconds > 0") }
            o.idle = v
        case "-h", "--help":
            print(usageText)
            exitProcess(0)
        default:
            throw UsageError(description: "unknown argument '\(a)'")
        }
        i += 1
    }
    let split = o.pubPort != nil || !o.subPorts.isEmpty
    if split && ![.fanout, .channels, .latency, .rate].contains(o.workload) {
        throw UsageError(description: "--pub-port and --sub-ports apply to the fanout, channels and latency workloads only")
    }
    if split && o.proto == .sink {
        throw UsageError(description: "--pub-port and --sub-ports need a real broker (sink mode has one in-process port)")
    }
    if !portGiven, let pub = o.pubPort, !o.subPorts.isEmpty {
        o.port = pub
        portGiven = true
    }
    if o.proto != .sink && !portGiven {
        throw UsageError(description: "--port is required (except with --proto sink, or with both --pub-port and --sub-ports)")
    }
    if o.workload == .ping && o.proto != .redis {
        throw UsageError(description: "the ping workload is Redis only (PING -> PONG)")
    }
    if (o.proto == .herald || o.proto == .heraldCompact || o.proto == .heraldWebSocket || o.proto == .sink) && o.size < 2 {
        throw UsageError(description: "--size must be >= 2 for Herald (the JSON string includes its quotes)")
    }
    if o.proto == .sink && o.workload == .channels {
        throw UsageError(description: "sink mode supports the fanout and latency workloads only")
    }
    if o.workload == .set && o.proto != .herald {
        throw UsageError(description: "the set workload is Herald only (retained values)")
    }
    if o.proto == .sink && o.workload.isScale {
        throw UsageError(description: "the idle and subscriptions workloads need a real broker (--proto herald|nats|redis|mqtt)")
    }
    if o.workload == .subscriptions {
        if !o.subConnsGiven { o.subConns = 4 }
        if o.subConns > o.subsTotal { o.subConns = o.subsTotal }
    } else if o.subConns > o.channels {
        o.subConns = o.channels
    }
    if o.warmup < 0 { o.warmup = min(1000, o.count / 10) }
    return o
}
