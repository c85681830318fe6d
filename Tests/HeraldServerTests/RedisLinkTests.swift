import CLibUV
import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldServer

/// `RedisLink` against a real redis-server, on a libuv loop run by the test (docs/cluster.md).
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"))
struct RedisLinkTests {
    /// Runs a fresh loop until `body`'s links are closed or `seconds` pass (then closes them).
    private func withLoop(seconds: UInt64 = 5, _ body: (UnsafeMutablePointer<uv_loop_t>, @escaping () -> Void) -> [RedisLink]) {
        let loop = UnsafeMutablePointer<uv_loop_t>.allocate(capacity: 1)
        uv_loop_init(loop)
        let guardTimer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        uv_timer_init(loop, guardTimer)
        var links: [RedisLink] = []
        let finish = {
            for link in links { link.close() }
            if uv_is_closing(UnsafeMutableRawPointer(guardTimer).assumingMemoryBound(to: uv_handle_t.self)) == 0 {
                uv_close(UnsafeMutableRawPointer(guardTimer).assumingMemoryBound(to: uv_handle_t.self)) { $0?.deallocate() }
            }
        }
        let box = Unmanaged.passRetained(FinishBox(finish))
        guardTimer.pointee.data = box.toOpaque()
        uv_timer_start(guardTimer, { timer in
            guard let data = timer?.pointee.data else { return }
            Unmanaged<FinishBox>.fromOpaque(data).takeUnretainedValue().run()
        }, seconds * 1_000, 0)
        links = body(loop, finish)
        uv_run(loop, UV_RUN_DEFAULT)
        box.release()
        uv_loop_close(loop)
        loop.deallocate()
    }

    @Test func commandsAreAnsweredInOrderAndPubSubMessagesArrive() throws {
        let redis = try TestRedis()
        // The link's callbacks hold `redis`, and may outlive the test: stop it here, or its
        // redis-server outlives the run.
        defer { redis.stop() }
        var answers: [RedisReply] = []
        var messages: [[UInt8]] = []
        withLoop { loop, finish in
            let commands = RedisLink(host: "127.0.0.1", port: redis.port, loop: loop)
            let listener = RedisLink(host: "127.0.0.1", port: redis.port, loop: loop)
            commands.onConnect = {
                commands.send([Array("SET".utf8), Array("k".utf8), [0, 1, 10, 13]]) { answers.append($0) }
                commands.send([Array("GET".utf8), Array("k".utf8)]) { answers.append($0) }
                commands.send([Array("INCR".utf8), Array("k".utf8)]) { answers.append($0) }
            }
            listener.onConnect = {
                listener.subscribe([Array("news".utf8)]) { reply in
                    guard let parts = reply.elements, parts.count == 3 else { return }
                    if parts[0].bytes == Array("subscribe".utf8) {
                        commands.send([Array("PUBLISH".utf8), Array("news".utf8), Array("hello".utf8)]) { _ in }
                    } else if let payload = parts[2].bytes {
                        messages.append(payload)
                        finish()
                    }
                }
            }
            commands.start()
            listener.start()
            return [commands, listener]
        }
        #expect(answers.count == 3)
        #expect(answers.first == .status("OK"))
        #expect(answers.dropFirst().first == .string([0, 1, 10, 13]), "binary-safe arguments")
        #expect(answers.last?.failure?.contains("not an integer") == true, "errors come back as errors")
        #expect(messages == [Array("hello".utf8)])
    }

    @Test func aLostConnectionAnswersPendingCommandsAndReconnectsWhenRedisIsBack() throws {
        let redis = try TestRedis()
        // The link's callbacks hold `redis`, and may outlive the test: stop it here, or its
        // redis-server outlives the run.
        defer { redis.stop() }
        var connects = 0
        var reasons: [String] = []
        var afterRestart: RedisReply?
        withLoop(seconds: 10) { loop, finish in
            let link = RedisLink(host: "127.0.0.1", port: redis.port, loop: loop)
            link.onConnect = {
                connects += 1
                if connects == 1 {
                    redis.stop()
                    #expect(link.send([Array("PING".utf8)]) { reply in reasons.append(reply.failure ?? "answered") })
                } else {
                    link.send([Array("PING".utf8)]) { reply in
                        afterRestart = reply
                        finish()
                    }
                }
            }
            link.onDisconnect = { reason in
                reasons.append(reason)
                if reasons.count == 2 { try? redis.restart() }
            }
            link.start()
            return [link]
        }
        #expect(reasons.first == "connection to Redis lost", "the pending PING is answered .disconnected")
        #expect(connects == 2, "it came back by itself: \(reasons)")
        #expect(afterRestart == .status("PONG"))
    }

    /// Backpressure's figures (`ClusterEngine+Backpressure`): a command counts in `inFlight`
    /// and, with its RESP length, in `outstandingBytes` from `send` until its answer, and a
    /// `whenDrained` action runs once the figures are at its mark, at the latest when the
    /// connection goes (every pending command is then answered).
    @Test func outstandingCommandsCountInOpsAndBytesUntilAnswered() throws {
        let redis = try TestRedis()
        // The link's callbacks hold `redis`, and may outlive the test: stop it here, or its
        // redis-server outlives the run.
        defer { redis.stop() }
        let set = [Array("SET".utf8), Array("k".utf8), Array(repeating: UInt8(ascii: "x"), count: 1_000)]
        let block = [Array("BLPOP".utf8), Array("nothing".utf8), Array("0".utf8)]
        var sent: (ops: Int, bytes: Int)?
        var afterSet: (ops: Int, bytes: Int)?
        var drained: (ops: Int, bytes: Int)?
        var blocked: RedisReply?
        withLoop(seconds: 10) { loop, finish in
            let link = RedisLink(host: "127.0.0.1", port: redis.port, loop: loop)
            link.onConnect = {
                guard sent == nil else { return }
                link.send(set) { _ in }
                link.send(block) { blocked = $0 }
                sent = (link.inFlight, link.outstandingBytes)
                link.whenDrained(ops: 1, bytes: RESPCommand.encode(block).count) {
                    afterSet = (link.inFlight, link.outstandingBytes)
                    link.whenDrained(ops: 0, bytes: 0) {
                        drained = (link.inFlight, link.outstandingBytes)
                        finish()
                    }
                    #expect(link.isWatchingDrain, "BLPOP is still outstanding")
                    redis.stop()
                }
            }
            link.start()
            return [link]
        }
        #expect(sent?.ops == 2 && sent?.bytes == RESPCommand.encode(set).count + RESPCommand.encode(block).count, "\(String(describing: sent))")
        #expect(afterSet?.ops == 1 && afterSet?.bytes == RESPCommand.encode(block).count, "\(String(describing: afterSet))")
        #expect(drained?.ops == 0 && drained?.bytes == 0, "\(String(describing: drained))")
        #expect(blocked == .disconnected)
    }

    @Test func respEncodingIsArraysOfBulkStrings() {
        #expect(RESPCommand.encode(["GET", "a b"]) == Array("*2\r\n$3\r\nGET\r\n$3\r\na b\r\n".utf8))
        #expect(RESPCommand.encode([[UInt8]()]) == Array("*1\r\n$0\r\n\r\n".utf8))
    }

    /// What `send` hands hiredis: `RESPCommand.encode`'s bytes, the length without the NUL
    /// after them, for short, empty and long (multi-digit length) arguments.
    @Test func sentCommandIsTheRESPEncodingAndANul() {
        let cases: [[[UInt8]]] = [
            [Array("GET".utf8), Array("a b".utf8)], [[]],
            (0..<12).map { Array(repeating: UInt8(ascii: "x"), count: $0 * 37) },
        ]
        for arguments in cases {
            var seen: [UInt8] = []
            var length = -1
            _ = RedisLink.withTerminated(arguments) { command, count in
                length = count
                if let command { seen = Array(UnsafeRawBufferPointer(start: command, count: count + 1)) }
                return 0
            }
            let encoded = RESPCommand.encode(arguments)
            #expect(length == encoded.count)
            #expect(RedisLink.encodedSize(arguments) == encoded.count)
            #expect(seen == encoded + [0])
        }
    }
}

/// Lets a C timer callback run a Swift closure.
private final class FinishBox {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
