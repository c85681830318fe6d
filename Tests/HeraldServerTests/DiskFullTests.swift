import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real daemon with its data folder on a 2 MiB tmpfs that runs full (issue 13, item 3):
/// no client hangs, memory stays bounded, SIGTERM still answers, writes resume by themselves.
@Suite(.serialized, .enabled(if: SmallTmpfs.canMount, "mounting a tmpfs needs root (CAP_SYS_ADMIN); skipped"))
struct DiskFullTests {
    /// A 4 KiB JSON string value, more than the free part of any page the log holds.
    private static let bigValue = "\"" + String(repeating: "v", count: 4_094) + "\""

    /// - Parameter timeoutMs: `disk_full_timeout_ms`, or nil for the default (so the test
    ///   also runs against a daemon from before the key).
    private func start(on tmpfs: SmallTmpfs, timeoutMs: Int?) throws -> DaemonProcess {
        let timeout = timeoutMs.map { "disk_full_timeout_ms: \($0)," } ?? ""
        return try DaemonProcess(config: """
            data_dir: "\(tmpfs.path)/data", fsync: "always", compact_min_bytes: 100000000,
            monitor_port: 0, \(timeout)
            """)
    }

    private func set(_ channel: String, rid: Int) -> String {
        #"{"op":"set","ch":"\#(channel)","value":\#(Self.bigValue),"rid":\#(rid)}"#
    }

    private func metric(_ daemon: DaemonProcess, _ name: String) throws -> String? {
        let body = try HTTPTestClient.request("GET", "/metrics", port: try daemon.monitorPort()).body
        return body.split(separator: "\n").first { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(name.count + 1)) }
    }

    private func count(_ daemon: DaemonProcess, _ text: String) -> Int {
        daemon.log.filter { $0.contains(text) }.count
    }

    @Test func aWriteTheFullDiskCannotTakeIsUnavailableWithinTheTimeoutThenWritesResume() throws {
        let tmpfs = try #require(SmallTmpfs())
        let daemon = try start(on: tmpfs, timeoutMs: 1_000)
        let writer = try daemon.client()
        #expect(try writer.request(set("full.a", rid: 1))["ok"] as? String == "set")
        #expect(try metric(daemon, "herald_data_folder_full") == "0")
        tmpfs.fill()
        let started = Date()
        writer.send(set("full.a", rid: 2))
        let held = try writer.frame(timeout: 4)
        let waited = Date().timeIntervalSince(started)
        #expect(held["error"] as? String == "unavailable", "\(held)")
        #expect((held["message"] as? String)?.hasPrefix("data folder full") == true)
        #expect(held["rid"] as? Int == 2)
        #expect(waited >= 0.9 && waited < 2.5, "answered after \(waited) s for disk_full_timeout_ms 1000")
        // While full, other writes are refused at once, and nothing else waits.
        let other = try daemon.client()
        for rid in 3...12 {
            let started = Date()
            let answer = try other.request(set("full.b", rid: rid))
            #expect(answer["error"] as? String == "unavailable", "\(answer)")
            #expect(Date().timeIntervalSince(started) < 0.5)
        }
        #expect(try other.request(#"{"op":"get","ch":"full.b"}"#)["rev"] as? Int == 0, "a refused write changed nothing")
        #expect(try metric(daemon, "herald_data_folder_full") == "1")
        #expect(count(daemon, "data folder full; state changes are refused") == 1, "logged once, not per write")
        tmpfs.free()
        var resumed = false
        for rid in 100..<120 where !resumed {
            usleep(250_000)
            resumed = try other.request(set("full.b", rid: rid))["ok"] as? String == "set"
        }
        #expect(resumed, "writes resume by themselves once space returns")
        #expect(try metric(daemon, "herald_data_folder_full") == "0")
        #expect(count(daemon, "data folder writable again") == 1)
    }

    @Test func fiftyThousandPipelinedSetsOnAFullDiskKeepMemoryBounded() throws {
        let tmpfs = try #require(SmallTmpfs())
        let daemon = try start(on: tmpfs, timeoutMs: 1_000)
        let client = try daemon.client()
        #expect(try client.request(set("full.big", rid: 0))["ok"] as? String == "set")
        tmpfs.fill()
        let before = try #require(daemon.residentBytes)
        let total = 50_000
        let descriptor = client.fd
        let sender = Thread {
            var burst: [UInt8] = []
            for rid in 1...total {
                burst.append(contentsOf: Array((#"{"op":"set","ch":"full.big","value":"# + DiskFullTests.bigValue
                    + #","rid":"# + String(rid) + "}\n").utf8))
                if burst.count >= 1 << 20 || rid == total {
                    var offset = 0
                    while offset < burst.count {
                        let n = burst[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                        if n <= 0 { return }
                        offset += n
                    }
                    burst.removeAll(keepingCapacity: true)
                }
            }
        }
        sender.start()
        var refused = 0
        var peak = before
        for k in 1...total {
            let answer = try client.frame(timeout: 30)
            if answer["error"] as? String == "unavailable" { refused += 1 }
            if k % 5_000 == 0 { peak = max(peak, daemon.residentBytes ?? 0) }
        }
        let growth = (peak - before) >> 20
        #expect(refused == total, "every set on the full disk is unavailable")
        #expect(growth < 48, "RSS grew by \(growth) MiB for \(total) pipelined 4 KB sets")
        print("disk full: \(total) pipelined 4 KB sets, RSS \(before >> 20) MiB before, peak +\(growth) MiB")
    }

    @Test func sigtermWhileTheDiskIsFullAnswersHeldWritesWithShuttingDown() throws {
        let tmpfs = try #require(SmallTmpfs())
        // The default disk_full_timeout_ms (5 s) holds the answer past the SIGTERM at 0.5 s.
        let daemon = try start(on: tmpfs, timeoutMs: nil)
        let client = try daemon.client()
        #expect(try client.request(set("full.c", rid: 1))["ok"] as? String == "set")
        tmpfs.fill()
        client.send(set("full.c", rid: 2))
        #expect(throws: (any Error).self, "held while the disk is full") { try client.frame(timeout: 0.5) }
        daemon.signal(SIGTERM)
        let held = try client.frame(timeout: 5)
        #expect(held["error"] as? String == "shutting_down", "\(held)")
        #expect(held["op"] as? String == "set")
        #expect(held["rid"] as? Int == 2)
        #expect(try client.frame(timeout: 5)["error"] as? String == "shutting_down")
        #expect(daemon.waitForExit(seconds: 10) != nil, "the daemon exits")
        #expect(count(daemon, "stopped with state changes the data folder did not take") == 1)
    }

    @Test func changesInFlightWhenTheDiskFillsAreUnconfirmedThenWrittenWhenSpaceReturns() throws {
        let tmpfs = try #require(SmallTmpfs())
        var daemon = try start(on: tmpfs, timeoutMs: 1_000)
        let client = try daemon.client()
        #expect(try client.request(set("full.d", rid: 0))["ok"] as? String == "set")
        tmpfs.fill(leaving: 40_000)
        // One burst: the sets of a read are applied in one pass, before the writer fails on any.
        let total = 50
        client.send(bytes: Array((1...total).map { set("full.d", rid: $0) }.joined(separator: "\n").utf8) + [10])
        var unconfirmed = 0, lastRev = 1
        for _ in 1...total {
            let answer = try client.frame(timeout: 5)
            if answer["ok"] as? String == "set" {
                lastRev = try #require(answer["rev"] as? Int)
            } else if let rev = answer["rev"] as? Int {
                #expect(answer["error"] as? String == "unavailable")
                #expect((answer["message"] as? String)?.contains("not confirmed") == true)
                unconfirmed += 1
                lastRev = rev
            }
        }
        // An `ok` needs its whole batch written, so the sets of the failing batch are all
        // unconfirmed; once the fault is known, every further set is refused, with no rev.
        #expect(unconfirmed > 0)
        for rid in 100..<110 {
            let answer = try client.request(set("full.d", rid: rid))
            #expect(answer["error"] as? String == "unavailable" && answer["rev"] == nil, "\(answer)")
        }
        tmpfs.free()
        var resumed = false
        for rid in 200..<220 where !resumed {
            usleep(250_000)
            resumed = try client.request(#"{"op":"set","ch":"full.e","value":1,"rid":\#(rid)}"#)["ok"] as? String == "set"
        }
        #expect(resumed)
        #expect(try client.request(#"{"op":"get","ch":"full.d"}"#)["rev"] as? Int == lastRev)
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(seconds: 10) == 0)
        daemon = try start(on: tmpfs, timeoutMs: 1_000)
        let after = try daemon.client().request(#"{"op":"get","ch":"full.d"}"#)
        #expect(after["rev"] as? Int == lastRev, "the unconfirmed changes were written once space returned")
    }
}
