import Foundation
import Testing
@testable import HeraldServer

/// The monitor's keys in `config/heraldd.json5`.
struct MonitorConfigTests {
    private func decode(_ text: String) throws -> Config {
        try Config.decode(json5: Data(text.utf8), source: "config/heraldd.json5")
    }

    @Test func monitorIsOffByDefaultOnLoopbackWithAFiveSecondTimeout() {
        let config = Config()
        #expect(config.monitorPort == nil)
        #expect(config.monitorHost == "127.0.0.1")
        #expect(config.monitorTimeoutMs == 5000)
    }

    @Test func monitorKeysAreReadAndNullMeansOff() throws {
        let config = try decode("{ monitor_port: 0, monitor_host: '::1', monitor_timeout_ms: 250 }")
        #expect(config.monitorPort == 0)
        #expect(config.monitorHost == "::1")
        #expect(config.monitorTimeoutMs == 250)
        #expect(try decode("{ monitor_port: null }").monitorPort == nil)
    }

    @Test func badMonitorValuesStopStartUpNamingTheKey() {
        #expect(throws: ConfigError.self) { try decode("{ monitor_port: 70000 }") }
        #expect(throws: ConfigError.self) { try decode("{ monitor_port: '9740' }") }
        #expect(throws: ConfigError.self) { try decode("{ monitor_timeout_ms: 10 }") }
        #expect(throws: ConfigError.self) { try decode("{ monitor_host: '' }") }
    }

    @Test func onlyTheTimeoutIsLive() {
        var fresh = Config()
        fresh.monitorPort = 9740
        fresh.monitorHost = "0.0.0.0"
        fresh.monitorTimeoutMs = 1000
        let merged = Config().reloadingLive(from: fresh)
        #expect(merged.monitorPort == nil)
        #expect(merged.monitorTimeoutMs == 1000)
        #expect(Config().keysNeedingRestart(for: fresh) == ["monitor_port", "monitor_host"])
    }
}
