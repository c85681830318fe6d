import HeraldBroker
import Testing
@testable import HeraldServer

/// Routing, status codes and the two renderers of the HTTP monitor, without sockets.
struct MonitorRenderingTests {
    private static let figures = [
        StatsFigure("uptime_ms", 12_345), StatsFigure("connections", 2), StatsFigure("total_connections", 7),
        StatsFigure("msgs_in", 40), StatsFigure("bytes_out", 900), StatsFigure("brand_new_figure", 5),
    ]

    private static func snapshot(stopping: Bool = false) -> MonitorSnapshot {
        MonitorSnapshot(version: "1.2.3", isStopping: stopping, figures: figures,
                        process: ProcessFigures(residentBytes: 4096, virtualBytes: 8192, openFDs: 9,
                                                maxFDs: 1024, cpuMicroseconds: 1_500_000),
                        wallClockMs: 1_700_000_012_345)
    }

    private func get(_ path: String, method: String = "GET", stopping: Bool = false) -> HTTPResponse {
        let request = HTTPRequest(method: method, target: path, path: path, minorVersion: 1,
                                  fields: [HTTPRequest.Field(name: "Host", value: "x")])
        return MonitorRoutes.respond(to: request, isStopping: { stopping }, snapshot: { Self.snapshot(stopping: stopping) })
    }

    private func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test func healthzIsOkUntilShutdownThen503() {
        #expect(get("/healthz").status == .ok)
        #expect(text(get("/healthz")) == "ok\n")
        #expect(get("/healthz", stopping: true).status == .serviceUnavailable)
    }

    @Test func unknownPathsAre404AndOtherMethods405WithAllow() {
        #expect(get("/index.html").status == .notFound)
        #expect(get("/").status == .ok, "the console (issue 37)")
        #expect(get("/metrics/").status == .notFound)
        #expect(get("*", method: "OPTIONS").status == .notFound)
        let post = get("/metrics", method: "POST")
        #expect(post.status == .methodNotAllowed)
        #expect(post.allow == "GET, HEAD")
        #expect(get("/varz", method: "get").status == .methodNotAllowed, "methods are case-sensitive")
        #expect(get("/varz", method: "HEAD").status == .ok)
    }

    @Test func varzCarriesEveryStatsFigureUnderItsStatsName() {
        let body = text(get("/varz"))
        #expect(body.hasPrefix(#"{"version":"1.2.3","shutting_down":false,"uptime_ms":12345,"connections":2,"#))
        #expect(body.contains(#""brand_new_figure":5"#))
        #expect(body.contains(#""process":{"rss_bytes":4096,"virtual_bytes":8192,"open_fds":9,"max_fds":1024,"cpu_us":1500000}"#))
        #expect(get("/varz").contentType == "application/json")
    }

    @Test func metricsHaveHelpAndTypeAndPrometheusNames() {
        let response = get("/metrics")
        #expect(response.contentType == "text/plain; version=0.0.4; charset=utf-8")
        let lines = text(response).split(separator: "\n").map(String.init)
        #expect(lines.contains(#"herald_info{version="1.2.3"} 1"#))
        #expect(lines.contains("herald_uptime_seconds 12.345"))
        #expect(lines.contains("# TYPE herald_connections gauge"))
        #expect(lines.contains("herald_connections 2"))
        #expect(lines.contains("# TYPE herald_connections_total counter"))
        #expect(lines.contains("herald_connections_total 7"))
        #expect(lines.contains("herald_messages_in_total 40"))
        #expect(lines.contains("herald_sent_bytes_total 900"))
        #expect(lines.contains("herald_brand_new_figure 5"), "an unknown figure still shows, as a gauge")
        #expect(lines.contains("process_cpu_seconds_total 1.5"))
        #expect(lines.contains("process_start_time_seconds 1700000000"))
        #expect(lines.contains("herald_shutting_down 0"))
        // Every sample is preceded by its HELP and TYPE lines.
        for (index, line) in lines.enumerated() where !line.hasPrefix("#") {
            let name = String(line.prefix { $0 != " " && $0 != "{" })
            #expect(index >= 2 && lines[index - 2].hasPrefix("# HELP " + name + " ") && lines[index - 1].hasPrefix("# TYPE " + name + " "),
                    "\(name) lacks HELP/TYPE")
        }
    }

    @Test func everyStatsFigureOfTheBrokerHasANamedMetric() {
        let broker = Broker(config: BrokerConfig(), now: 0, wallClock: { 0 })
        let known = Set(MetricsRenderer.metrics.map(\.figure))
        for figure in broker.statsFigures(now: 0) {
            #expect(known.contains(figure.name), "stats figure \(figure.name) has no metric in MetricsRenderer.metrics")
        }
        let names = MetricsRenderer.metrics.map(\.name)
        #expect(Set(names).count == names.count)
        for metric in MetricsRenderer.metrics where metric.kind == .counter { #expect(metric.name.hasSuffix("_total")) }
    }

    @Test func decimalsAreExactWithoutTrailingZeros() {
        #expect(MetricsRenderer.decimal(12_345, divisor: 1000) == "12.345")
        #expect(MetricsRenderer.decimal(12_000, divisor: 1000) == "12")
        #expect(MetricsRenderer.decimal(12_050, divisor: 1000) == "12.05")
        #expect(MetricsRenderer.decimal(5, divisor: 1000) == "0.005")
        #expect(MetricsRenderer.decimal(-1500, divisor: 1000) == "-1.5")
        #expect(MetricsRenderer.decimal(7, divisor: 1) == "7")
    }

    @Test func labelValuesAreEscaped() {
        #expect(String(decoding: MetricsRenderer.escapedLabelValue("a\"b\\c\nd"), as: UTF8.self) == #"a\"b\\c\nd"#)
    }

    @Test func headAnswersCarryTheLengthButNoBody() {
        let response = HTTPResponse.plain(.ok, "ok")
        let head = String(decoding: response.serialized(includeBody: false), as: UTF8.self)
        #expect(head == "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
        let get = String(decoding: response.serialized(), as: UTF8.self)
        #expect(get.hasSuffix("\r\n\r\nok\n"))
    }

    @Test func processFiguresAreReadFromProc() throws {
        let figures = try #require(ProcessFigures.read())
        #expect(figures.residentBytes > 0)
        #expect(figures.virtualBytes >= figures.residentBytes)
        #expect(figures.openFDs >= 3)
        #expect(figures.maxFDs >= figures.openFDs)
    }
}
