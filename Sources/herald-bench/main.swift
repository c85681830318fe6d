// herald-bench: one load generator for Herald, NATS, Redis, MQTT and a no-op sink.
#if canImport(Glibc)
import Glibc
#endif

signal(SIGPIPE, SIG_IGN)

let options: Options
do {
    options = try parseArguments(Array(CommandLine.arguments.dropFirst()))
} catch {
    writeStderr("herald-bench: \(error)\n\n\(usageText)\n")
    exit(2)
}

func grouped(_ v: Double) -> String {
    let n = Int(v.rounded())
    let s = String(n.magnitude)
    var out = n < 0 ? "-" : ""
    for (k, ch) in s.enumerated() {
        if k > 0 && (s.count - k) % 3 == 0 { out.append(",") }
        out.append(ch)
    }
    return out
}

func fixed(_ v: Double, _ digits: Int) -> String {
    var m = 1.0
    for _ in 0..<digits { m *= 10 }
    let r = (v * m).rounded() / m
    return "\(r)"
}

func jsonNumber(_ v: Double?) -> String {
    guard let v, v.isFinite else { return "null" }
    return fixed(v, 3)
}

func jsonInt(_ v: Int?) -> String {
    v.map { String($0) } ?? "null"
}

func mib(_ bytes: Int) -> String {
    fixed(Double(bytes) / 1048576, 1) + " MiB"
}

/// The scale workloads report memory and set-up time instead of message rates.
func runScale() throws {
    let r: ScaleResult
    switch options.proto {
    case .herald: r = try Runner<HeraldProto>(o: options, port: options.port).runScale()
    case .heraldCompact: r = try Runner<HeraldCompactProto>(o: options, port: options.port).runScale()
    case .heraldWebSocket: r = try Runner<HeraldWebSocketProto>(o: options, port: options.port).runScale()
    case .nats: r = try Runner<NatsProto>(o: options, port: options.port).runScale()
    case .redis: r = try Runner<RedisProto>(o: options, port: options.port).runScale()
    case .mqtt: r = try Runner<MqttProto>(o: options, port: options.port).runScale()
    case .sink: throw BenchError("sink mode has no scale workloads")
    }
    let idle = r.workload == "idle"
    var line = "\(r.proto) \(r.workload): "
    line += idle ? "\(grouped(Double(r.items))) connections (handshake done)"
                 : "\(grouped(Double(r.items))) subscriptions over \(r.conns) connections"
    line += " in \(fixed(r.seconds, 3)) s"
    if !idle && r.seconds > 0 { line += " (\(grouped(Double(r.items) / r.seconds)) subs/s)" }
    if let b = r.rssBefore, let a = r.rssAfter, let per = r.bytesPerItem {
        line += ", RSS \(mib(b)) -> \(mib(a)), \(grouped(per)) B per \(idle ? "connection" : "subscription")"
    } else {
        line += " (no --pid: RSS not measured)"
    }
    print(line)
    if options.json {
        let perKey = idle ? "bytes_per_conn" : "bytes_per_sub"
        let countKey = idle ? "\"conns\":\(r.items)" : "\"subs_total\":\(r.items),\"sub_conns\":\(r.conns)"
        print("{\"proto\":\"\(r.proto)\",\"workload\":\"\(r.workload)\",\(countKey),"
            + "\"seconds\":\(jsonNumber(r.seconds)),\"rss_before\":\(jsonInt(r.rssBefore)),"
            + "\"rss_after\":\(jsonInt(r.rssAfter)),\"\(perKey)\":\(jsonNumber(r.bytesPerItem))}")
    }
}

if options.workload.isScale {
    do {
        try runScale()
        exit(0)
    } catch {
        fail("\(error)")
    }
}

do {
    var result: BenchResult
    switch options.proto {
    case .herald: result = try Runner<HeraldProto>(o: options, port: options.port).run()
    case .heraldCompact: result = try Runner<HeraldCompactProto>(o: options, port: options.port).run()
    case .heraldWebSocket: result = try Runner<HeraldWebSocketProto>(o: options, port: options.port).run()
    case .nats: result = try Runner<NatsProto>(o: options, port: options.port).run()
    case .redis: result = try Runner<RedisProto>(o: options, port: options.port).run()
    case .mqtt: result = try Runner<MqttProto>(o: options, port: options.port).run()
    case .sink:
        let sink = try SinkServer.start()
        var o = options
        o.host = "127.0.0.1"
        result = try Runner<HeraldProto>(o: o, port: sink.port).run()
        result.proto = "sink"
    }
    let r = result
    var line = "\(r.proto) \(r.workload)"
    switch options.workload {
    case .fanout: line += " 1->\(r.subs)"
    case .channels: line += " \(options.channels) ch/\(options.subConns) conns + wildcard"
    case .rate: line += " at \(options.rate)/s"
    case .latency, .idle, .subscriptions, .set, .ping: break
    }
    if let pub = options.pubPort { line += " (publisher on :\(pub))" }
    if !options.subPorts.isEmpty {
        line += " (subscribers on :" + options.subPorts.map(String.init).joined(separator: ",:") + ")"
    }
    let unit = options.workload == .set ? "sets/s" : options.workload == .ping ? "round trips/s" : "msgs/s"
    line += " \(r.size) B: \(grouped(r.msgsPerSec)) \(unit), delivered \(r.delivered)/\(r.expected)"
    line += ", lost \(r.lost), \(fixed(r.seconds, 3)) s"
    if let p50 = r.p50, let p99 = r.p99, let p999 = r.p999 {
        line += ", p50 \(fixed(p50, 1)) us, p99 \(fixed(p99, 1)) us, p99.9 \(fixed(p999, 1)) us"
    }
    if let c = r.setup {
        line += "; subscribed in \(fixed(c.subscribeSeconds, 3)) s"
        if let b = c.rssBefore, let a = c.rssSubscribed, let per = c.bytesPerChannel {
            line += ", RSS \(mib(b)) -> \(mib(a)) subscribed (\(grouped(per)) B per channel)"
        }
        if let a = c.rssDelivered, let per = c.bytesPerChannelDelivered {
            line += " -> \(mib(a)) delivered (\(grouped(per)) B per channel)"
        }
    }
    print(line)
    if options.json {
        var extra = ""
        if let c = r.setup {
            extra = ",\"channels\":\(c.channels),\"sub_conns\":\(c.subConns),"
                + "\"subscribe_seconds\":\(jsonNumber(c.subscribeSeconds)),\"rss_before\":\(jsonInt(c.rssBefore)),"
                + "\"rss_subscribed\":\(jsonInt(c.rssSubscribed)),\"rss_delivered\":\(jsonInt(c.rssDelivered)),"
                + "\"bytes_per_channel\":\(jsonNumber(c.bytesPerChannel)),"
                + "\"bytes_per_channel_delivered\":\(jsonNumber(c.bytesPerChannelDelivered))"
        }
        print("{\"proto\":\"\(r.proto)\",\"workload\":\"\(r.workload)\",\"subs\":\(r.subs),\"size\":\(r.size),"
            + "\"count\":\(r.count),\"delivered\":\(r.delivered),\"lost\":\(r.lost),"
            + "\"seconds\":\(jsonNumber(r.seconds)),\"msgs_per_sec\":\(jsonNumber(r.msgsPerSec)),"
            + "\"p50_us\":\(jsonNumber(r.p50)),\"p99_us\":\(jsonNumber(r.p99)),\"p999_us\":\(jsonNumber(r.p999))\(extra)}")
    }
    if r.delivered == 0 {
        fail("no message was delivered (is the broker really a \(options.proto.rawValue) server on port \(options.port)?)")
    }
    exit(0)
} catch {
    fail("\(error)")
}
