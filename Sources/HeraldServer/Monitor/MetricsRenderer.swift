/// Renders a `MonitorSnapshot` in the Prometheus text exposition format (version 0.0.4).
///
/// Every `stats` figure becomes one metric: counters end in `_total`, sizes in `_bytes`,
/// times in seconds (Prometheus base units). A figure this table does not know yet (added
/// to `stats` later) still appears, as a gauge `herald_<name>`, so nothing is silently
/// missing from a scrape.
enum MetricsRenderer {
    /// The `Content-Type` of the exposition format.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Prometheus metric types used here.
    enum Kind: String {
        case counter, gauge
    }

    /// How one `stats` figure is exposed.
    struct Metric {
        /// The `stats` key.
        let figure: String
        /// The metric name.
        let name: String
        let kind: Kind
        let help: String
        /// Divide the figure by this (1000 turns ms into seconds).
        var divisor: Int = 1
    }

    /// The exposed metric of every `stats` figure; docs/protocol.md lists the same table.
    static let metrics: [Metric] = [
        Metric(figure: "uptime_ms", name: "herald_uptime_seconds", kind: .gauge,
               help: "Seconds since the daemon started.", divisor: 1000),
        Metric(figure: "connections", name: "herald_connections", kind: .gauge,
               help: "Client connections open now."),
        Metric(figure: "total_connections", name: "herald_connections_total", kind: .counter,
               help: "Client connections accepted since start."),
        Metric(figure: "channels", name: "herald_channels", kind: .gauge,
               help: "Channels that carried an event or were declared, $ channels excluded."),
        Metric(figure: "subscriptions", name: "herald_subscriptions", kind: .gauge,
               help: "Subscriptions held by all connections."),
        Metric(figure: "msgs_in", name: "herald_messages_in_total", kind: .counter,
               help: "Requests handled (every non-blank line read from a client)."),
        Metric(figure: "msgs_out", name: "herald_messages_out_total", kind: .counter,
               help: "Events delivered to subscriptions."),
        Metric(figure: "bytes_in", name: "herald_received_bytes_total", kind: .counter,
               help: "Bytes read from client connections."),
        Metric(figure: "bytes_out", name: "herald_sent_bytes_total", kind: .counter,
               help: "Bytes written to client connections."),
        Metric(figure: "slow_consumers", name: "herald_slow_consumers_total", kind: .counter,
               help: "Connections closed or throttled for falling behind."),
        Metric(figure: "dropped", name: "herald_dropped_events_total", kind: .counter,
               help: "Events skipped for slow consumers under the drop policy."),
        Metric(figure: "paced", name: "herald_paced_publishers_total", kind: .counter,
               help: "Times a publisher was not read until a subscriber past pace_pending caught up."),
        Metric(figure: "pace_timeouts", name: "herald_pace_timeouts_total", kind: .counter,
               help: "Pacing pauses that ran to their time limit (the subscriber did not catch up)."),
        Metric(figure: "locks", name: "herald_locks", kind: .gauge,
               help: "Locks held now."),
        Metric(figure: "instance_channels", name: "herald_instance_channels", kind: .gauge,
               help: "Instance channels owned by live connections."),
        Metric(figure: "requests", name: "herald_requests_pending", kind: .gauge,
               help: "Requests waiting for a reply."),
        Metric(figure: "timers", name: "herald_timers", kind: .gauge,
               help: "Pending deadlines (request, lock and signal timeouts)."),
        Metric(figure: "signals", name: "herald_signals_pending", kind: .gauge,
               help: "Signals under way."),
        Metric(figure: "links", name: "herald_links", kind: .gauge,
               help: "Channel links in force."),
        Metric(figure: "retained_bytes", name: "herald_retained_bytes", kind: .gauge,
               help: "Bytes of retained state over all channels, names included."),
        Metric(figure: "history_bytes", name: "herald_history_bytes", kind: .gauge,
               help: "Bytes of event history kept over all channels."),
        Metric(figure: "auth_failures", name: "herald_auth_failures_total", kind: .counter,
               help: "Hellos refused for a wrong token (forbidden)."),
        Metric(figure: "auth_blocked", name: "herald_auth_blocked_total", kind: .counter,
               help: "Hellos refused because their address had too many failures (too_many_attempts)."),
        Metric(figure: "unauthenticated", name: "herald_unauthenticated_connections", kind: .gauge,
               help: "Connections open now that have not authenticated yet."),
        Metric(figure: "cluster_ready", name: "herald_cluster_ready", kind: .gauge,
               help: "Cluster mode: 1 while this node is connected to Redis and serving cluster-wide ops, else 0."),
        Metric(figure: "cluster_nodes", name: "herald_cluster_nodes", kind: .gauge,
               help: "Cluster mode: live nodes this node counts, itself included."),
        Metric(figure: "cluster_redis_rtt_us", name: "herald_cluster_redis_rtt_seconds", kind: .gauge,
               help: "Cluster mode: the last liveness refresh's round trip to Redis, on the control link.",
               divisor: 1_000_000),
        Metric(figure: "cluster_pending_ops", name: "herald_cluster_pending_ops", kind: .gauge,
               help: "Cluster mode: commands awaiting Redis, ops queued until ready, held answers."),
        Metric(figure: "cluster_outstanding_ops", name: "herald_cluster_outstanding_ops", kind: .gauge,
               help: "Cluster mode: commands sent on the command link and not answered yet (bounded by max_outstanding_ops)."),
        Metric(figure: "cluster_outstanding_bytes", name: "herald_cluster_outstanding_bytes", kind: .gauge,
               help: "Cluster mode: bytes of those commands (bounded by max_outstanding_bytes)."),
        Metric(figure: "cluster_paused_connections", name: "herald_cluster_paused_connections", kind: .gauge,
               help: "Cluster mode: client connections not read now because cluster work is over its bound."),
        Metric(figure: "cluster_node_resets", name: "herald_cluster_node_resets_total", kind: .counter,
               help: "Cluster mode: times this process was declared down while running and started again as a new node."),
    ] + lockMetrics

    /// With `workers` above 1: per taker of the broker lock (`SharedBroker.LockSite`), how
    /// often it took the lock, how long it waited for it and how long it held it.
    static let lockMetrics: [Metric] = SharedBroker.LockSite.allCases.flatMap { site -> [Metric] in
        let figure = "broker_lock_" + site.name
        let name = "herald_broker_lock_" + site.name
        return [Metric(figure: figure + "_takes", name: name + "_takes_total", kind: .counter,
                       help: "Times the broker lock was taken by: " + site.name + " (workers above 1)."),
                Metric(figure: figure + "_wait_us", name: name + "_wait_seconds_total", kind: .counter,
                       help: "Time spent waiting for the broker lock by: " + site.name + " (workers above 1).",
                       divisor: 1_000_000),
                Metric(figure: figure + "_held_us", name: name + "_held_seconds_total", kind: .counter,
                       help: "Time the broker lock was held by: " + site.name + " (workers above 1).",
                       divisor: 1_000_000)]
    }

    /// The exposition text.
    /// - Parameter snapshot: the figures to render.
    /// - Returns: UTF-8 text, one HELP and TYPE line before each metric's sample.
    static func render(_ snapshot: MonitorSnapshot) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(4096)
        header(&out, "herald_info", .gauge, "Version of the running daemon; the value is always 1.")
        out.append(contentsOf: "herald_info{version=\"".utf8)
        out.append(contentsOf: escapedLabelValue(snapshot.version))
        out.append(contentsOf: "\"} 1\n".utf8)
        header(&out, "herald_shutting_down", .gauge, "1 once shutdown has begun, else 0.")
        sample(&out, "herald_shutting_down", snapshot.isStopping ? "1" : "0")
        header(&out, "herald_data_folder_full", .gauge,
               "1 while the data folder cannot take state changes (they are refused with unavailable), else 0.")
        sample(&out, "herald_data_folder_full", snapshot.isDataFolderFull ? "1" : "0")
        let known = Dictionary(metrics.map { ($0.figure, $0) }, uniquingKeysWith: { first, _ in first })
        for figure in snapshot.figures {
            let metric = known[figure.name] ?? Metric(
                figure: figure.name, name: "herald_" + sanitized(figure.name), kind: .gauge,
                help: "The stats figure " + figure.name + ".")
            header(&out, metric.name, metric.kind, metric.help)
            sample(&out, metric.name, decimal(figure.value, divisor: metric.divisor))
        }
        renderThrottled(snapshot.throttledMsByUser, into: &out)
        if let process = snapshot.process { renderProcess(process, snapshot: snapshot, into: &out) }
        return out
    }

    /// `herald_user_throttled_seconds_total{user="…"}`: per user with rate limits, how long
    /// its connections' reads were paused for them (each second once, however many waited).
    private static func renderThrottled(_ byUser: [String: Int], into out: inout [UInt8]) {
        guard !byUser.isEmpty else { return }
        header(&out, "herald_user_throttled_seconds_total", .counter,
               "Time a user's connections were paused by its rate limits (pub_per_s, bytes_in_per_s, ops_per_s).")
        for (user, ms) in byUser.sorted(by: { $0.key < $1.key }) {
            out.append(contentsOf: "herald_user_throttled_seconds_total{user=\"".utf8)
            out.append(contentsOf: escapedLabelValue(user))
            out.append(contentsOf: "\"} ".utf8)
            out.append(contentsOf: decimal(ms, divisor: 1000).utf8)
            out.append(10)
        }
    }

    /// The standard `process_*` metrics of the Prometheus client libraries, so existing
    /// dashboards work unchanged.
    private static func renderProcess(_ process: ProcessFigures, snapshot: MonitorSnapshot, into out: inout [UInt8]) {
        header(&out, "process_resident_memory_bytes", .gauge, "Resident memory size in bytes.")
        sample(&out, "process_resident_memory_bytes", String(process.residentBytes))
        header(&out, "process_virtual_memory_bytes", .gauge, "Virtual memory size in bytes.")
        sample(&out, "process_virtual_memory_bytes", String(process.virtualBytes))
        header(&out, "process_open_fds", .gauge, "Open file descriptors.")
        sample(&out, "process_open_fds", String(process.openFDs))
        header(&out, "process_max_fds", .gauge, "Limit on open file descriptors.")
        sample(&out, "process_max_fds", String(process.maxFDs))
        header(&out, "process_cpu_seconds_total", .counter, "User and system CPU time spent, in seconds.")
        sample(&out, "process_cpu_seconds_total", decimal(process.cpuMicroseconds, divisor: 1_000_000))
        if let uptime = snapshot.figure("uptime_ms") {
            header(&out, "process_start_time_seconds", .gauge, "Start time of the process since the Unix epoch, in seconds.")
            sample(&out, "process_start_time_seconds", decimal(snapshot.wallClockMs - uptime, divisor: 1000))
        }
    }

    private static func header(_ out: inout [UInt8], _ name: String, _ kind: Kind, _ help: String) {
        out.append(contentsOf: ("# HELP " + name + " " + escapedHelp(help) + "\n").utf8)
        out.append(contentsOf: ("# TYPE " + name + " " + kind.rawValue + "\n").utf8)
    }

    private static func sample(_ out: inout [UInt8], _ name: String, _ value: String) {
        out.append(contentsOf: (name + " " + value + "\n").utf8)
    }

    /// `value / divisor` written exactly in decimal (`1234` / 1000 is `1.234`), without
    /// going through floating point.
    static func decimal(_ value: Int, divisor: Int) -> String {
        guard divisor > 1 else { return String(value) }
        let negative = value < 0
        let magnitude = value.magnitude
        let whole = magnitude / UInt(divisor)
        let fraction = magnitude % UInt(divisor)
        var text = (negative ? "-" : "") + String(whole)
        if fraction != 0 {
            var digits = String(fraction)
            let width = String(divisor - 1).count
            digits = String(repeating: "0", count: width - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            text += "." + digits
        }
        return text
    }

    /// A metric name made of `[a-zA-Z0-9_]` only.
    private static func sanitized(_ name: String) -> String {
        String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
    }

    /// HELP text escaping: backslash and newline.
    private static func escapedHelp(_ text: String) -> String {
        text.replacingBackslashes().replacingNewlines()
    }

    /// Label value escaping: backslash, double quote and newline.
    static func escapedLabelValue(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case 10: out.append(contentsOf: "\\n".utf8)
            default: out.append(byte)
            }
        }
        return out
    }
}

private extension String {
    func replacingBackslashes() -> String {
        var out = ""
        for character in self { out += character == "\\" ? "\\\\" : String(character) }
        return out
    }

    func replacingNewlines() -> String {
        var out = ""
        for character in self { out += character == "\n" ? "\\n" : String(character) }
        return out
    }
}
