import Foundation
import HeraldTestSupport
import Testing

/// `config/grafana/herald.json` (issue 37, item 5): every metric its PromQL reads is one a
/// real heraldd exports, scraped from `/metrics` of a single node and of a cluster node.
@Suite struct GrafanaDashboardTests {
    /// The metric Prometheus makes itself for every target (not heraldd's to export).
    private static let prometheusOwn: Set<String> = ["up"]

    private static var dashboardURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/grafana/herald.json")
    }

    /// Every PromQL text of the dashboard: panel targets and template variable queries.
    private static func expressions() throws -> [String] {
        let data = try Data(contentsOf: dashboardURL)
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = root["panels"] as? [[String: Any]] ?? []
        var found = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        let variables = (root["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        found += variables.compactMap { $0["definition"] as? String }
        return found
    }

    /// The metric names an expression reads: every name right before a `{` selector, and
    /// every `herald_…`/`process_…` name however it is written.
    static func metricNames(in expression: String) -> Set<String> {
        var names = Set<String>()
        let patterns = [#"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{"#, #"\b((?:herald|process)_[A-Za-z0-9_]+)\b"#]
        for pattern in patterns {
            let regex = try? NSRegularExpression(pattern: pattern)
            let range = NSRange(expression.startIndex..., in: expression)
            for match in regex?.matches(in: expression, range: range) ?? [] {
                if let name = Range(match.range(at: 1), in: expression) { names.insert(String(expression[name])) }
            }
        }
        return names
    }

    /// The metric names of one `/metrics` answer (its `# TYPE` lines).
    private static func exported(monitorPort: Int) throws -> Set<String> {
        let body = try HTTPTestClient.request("GET", "/metrics", port: monitorPort).body
        return Set(body.split(separator: "\n").compactMap { line -> String? in
            let parts = line.split(separator: " ")
            return parts.count >= 3 && parts[0] == "#" && parts[1] == "TYPE" ? String(parts[2]) : nil
        })
    }

    @Test func theNameExtractionFindsSelectorsAndBareNames() {
        #expect(Self.metricNames(in: #"sum(rate(herald_messages_in_total{job=~"$job"}[5m])) by (instance)"#)
                == ["herald_messages_in_total"])
        #expect(Self.metricNames(in: #"up{job="x"} + process_open_fds / process_max_fds"#)
                == ["up", "process_open_fds", "process_max_fds"])
        #expect(Self.metricNames(in: "label_values(herald_info, job)") == ["herald_info"])
    }

    @Test func everyMetricTheDashboardReadsOutsideClusterModeIsOneASingleNodeExports() throws {
        let used = try Self.usedNames()
        let single = try DaemonProcess(config: "monitor_port: 0")
        let exported = try Self.exported(monitorPort: try single.monitorPort())
        let unknown = used.filter { !$0.hasPrefix("herald_cluster_") }.subtracting(exported).subtracting(Self.prometheusOwn)
        #expect(unknown.isEmpty, "the dashboard reads metrics heraldd does not export: \(unknown.sorted())")
    }

    @Test(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"))
    func everyMetricTheDashboardReadsIsOneAClusterNodeExports() throws {
        let used = try Self.usedNames()
        #expect(used.contains("herald_cluster_ready"), "the Redis link state is on the dashboard")
        let redis = try TestRedis()
        let node = try DaemonProcess(config: #"monitor_port: 0, cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "g" }"#)
        let exported = try Self.exported(monitorPort: try node.monitorPort())
        let unknown = used.subtracting(exported).subtracting(Self.prometheusOwn)
        #expect(unknown.isEmpty, "the dashboard reads metrics a cluster node does not export: \(unknown.sorted())")
    }

    private static func usedNames() throws -> Set<String> {
        let expressions = try expressions()
        #expect(expressions.count >= 18, "the panels and variables were read")
        let used = expressions.reduce(into: Set<String>()) { $0.formUnion(metricNames(in: $1)) }
        #expect(used.contains("herald_connections") && used.contains("herald_messages_in_total"))
        return used
    }
}
