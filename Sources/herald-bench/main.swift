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
    let s = String(n)
    var out = ""
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

do {
    var result: BenchResult
    switch options.proto {
    case .herald: result = try Runner<HeraldProto>(o: options, port: options.port).run()
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
    case .latency, .set: break
    }
    let unit = options.workload == .set ? "sets/s" : "msgs/s"
    line += " \(r.size) B: \(grouped(r.msgsPerSec)) \(unit), delivered \(r.delivered)/\(r.expected)"
    line += ", lost \(r.lost), \(fixed(r.seconds, 3)) s"
    if let p50 = r.p50, let p99 = r.p99, let p999 = r.p999 {
        line += ", p50 \(fixed(p50, 1)) us, p99 \(fixed(p99, 1)) us, p99.9 \(fixed(p999, 1)) us"
    }
    print(line)
    if options.json {
        print("{\"proto\":\"\(r.proto)\",\"workload\":\"\(r.workload)\",\"subs\":\(r.subs),\"size\":\(r.size),"
            + "\"count\":\(r.count),\"delivered\":\(r.delivered),\"lost\":\(r.lost),"
            + "\"seconds\":\(jsonNumber(r.seconds)),\"msgs_per_sec\":\(jsonNumber(r.msgsPerSec)),"
            + "\"p50_us\":\(jsonNumber(r.p50)),\"p99_us\":\(jsonNumber(r.p99)),\"p999_us\":\(jsonNumber(r.p999))}")
    }
    if r.delivered == 0 {
        fail("no message was delivered (is the broker really a \(options.proto.rawValue) server on port \(options.port)?)")
    }
    exit(0)
} catch {
    fail("\(error)")
}
