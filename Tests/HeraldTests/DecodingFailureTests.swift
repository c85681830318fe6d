import Foundation
import Herald
import HeraldTestSupport
import Testing

/// A signal kind for these tests: saving a document.
struct SaveDocument: HeraldSignal {
    static let channel = Channel("app", "doc")
    static let kind = "save"
    var revision: Int
}

/// Another kind at the same level.
struct CloseDocument: HeraldSignal {
    static let channel = Channel("app", "doc")
    static let kind = "close"
    var force: Bool
}

/// Issue 17, "Errors where they happen": a typed subscription hears of its own undecodable
/// events, a remote value of the wrong type is not "unset", and a typed signal handler is not
/// told about every other kind of signal passing its level.
@Suite struct DecodingFailureTests {
    @Test func typedSubscriptionHearsItsOwnDecodingFailures() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let globalErrors = collectErrors(client)
        let failures = LockedValue<[String]>([])
        let scores = LockedValue<[Int]>([])
        let options = SubscriptionOptions(onDecodingFailure: { error, metadata in
            if case .decoding = error { failures.withLock { $0.append(metadata.channel.name) } }
        })
        let token = try client.subscribe(Score.self, options: options) { score, _ in scores.withLock { $0.append(score.points) } }
        try await token.ready()
        try await client.publish(raw: RawJSON(#""not a score""#), to: Score.channel)
        try await client.publish(Score(points: 3))
        #expect(await eventually { scores.value == [3] })
        #expect(failures.value == ["game.score"])
        #expect(globalErrors.value.isEmpty, "the subscription was told, not the client: \(globalErrors.value)")
    }

    @Test func eventStreamHearsItsOwnDecodingFailures() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let globalErrors = collectErrors(client)
        let failures = LockedValue(0)
        let stream = try client.events(Score.self, options: SubscriptionOptions(onDecodingFailure: { _, _ in
            failures.withLock { $0 += 1 }
        }))
        try await stream.subscription.ready()
        try await client.publish(raw: RawJSON("[1]"), to: Score.channel)
        try await client.publish(Score(points: 5))
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.event.points == 5)
        #expect(failures.value == 1)
        #expect(globalErrors.value.isEmpty)
    }

    @Test func throwingStreamThrowsTheDecodingErrorWithChannelAndSeqAndEnds() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let globalErrors = collectErrors(client)
        let callbacks = LockedValue(0)
        // The callback is the other form's; the throwing form throws instead of calling it.
        let stream = try client.throwingEvents(Score.self, options: SubscriptionOptions(name: "scores", onDecodingFailure: { _, _ in
            callbacks.withLock { $0 += 1 }
        }))
        try await stream.subscription.ready()
        try await client.publish(Score(points: 1))
        let bad = try await client.publish(raw: RawJSON(#"{"points":"many"}"#), to: Score.channel)
        try await client.publish(Score(points: 3))
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next()?.event.points == 1)
        do throws(EventDecodingError) {
            let delivery = try await iterator.next()
            Issue.record("expected a decoding error, got \(String(describing: delivery))")
        } catch {
            #expect(error.channel.name == "game.score")
            #expect(error.seq == bad.seq)
            #expect(error.metadata.subscription == "scores")
            #expect(error.data?.description == #"{"points":"many"}"#)
            guard case .decoding(let type, let channel, _) = error.error else {
                Issue.record("expected .decoding, got \(error.error)")
                return
            }
            #expect(type == "Score" && channel == "game.score")
            #expect(error.description.contains("game.score") && error.description.contains("seq \(bad.seq)"))
        }
        // The sequence ended with the error: the good event after it is not delivered, and the
        // subscription is gone on the daemon too.
        #expect(try await iterator.next() == nil)
        #expect(stream.subscription.endReason == .cancelled)
        #expect(try await client.serverSubscriptions().isEmpty)   // the unsub went out first
        #expect(callbacks.value == 0)
        #expect(globalErrors.value.isEmpty, "thrown, not reported: \(globalErrors.value)")
    }

    @Test func throwingStreamWithGoodEventsFinishesWithoutError() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let stream = try client.throwingEvents(Score.self, options: SubscriptionOptions(max: 3))
        try await stream.subscription.ready()
        for points in 1...3 { try await client.publish(Score(points: points)) }
        var got: [Int] = []
        // The form docs/client.md shows: the thrown error is typed.
        do throws(EventDecodingError) {
            for try await delivery in stream { got.append(delivery.event.points) }
        } catch {
            Issue.record("unexpected \(error.description) on \(error.channel)")
        }
        #expect(got == [1, 2, 3])
        #expect(stream.subscription.endReason == .finished)
    }

    @Test func eventStreamSkipsAnUndecodableEventAndGoesOn() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let globalErrors = collectErrors(client)
        let stream = try client.events(Score.self, options: SubscriptionOptions(max: 3))
        try await stream.subscription.ready()
        try await client.publish(Score(points: 1))
        try await client.publish(raw: RawJSON(#"{"points":"many"}"#), to: Score.channel)
        try await client.publish(Score(points: 3))
        var got: [Int] = []
        for await delivery in stream { got.append(delivery.event.points) }
        #expect(got == [1, 3])
        // No callback set: the client's error handler hears of it, naming the channel.
        #expect(await eventually { globalErrors.value.count == 1 })
        guard case .decoding(let type, let channel, _)? = globalErrors.value.first else {
            Issue.record("expected .decoding, got \(globalErrors.value)")
            return
        }
        #expect(type == "Score" && channel == "game.score")
    }

    @Test func remoteValueOfTheWrongTypeThrowsInsteadOfReadingAsUnset() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let channel = Channel("app", "count")
        try await client.set("a string", at: channel)
        let error = await thrownError { () async throws(HeraldClientError) in try await client.remoteValue(Int.self, at: channel) }
        guard case .decoding(let type, let name, _)? = error else {
            Issue.record("expected .decoding, got \(String(describing: error))")
            return
        }
        #expect(type == "Int" && name == "app.count")
        // An unset channel is still a mirror with rev 0, not an error.
        let unset = try await client.remoteValue(Int.self, at: Channel("app", "unset"))
        #expect(unset.current.rev == 0 && unset.current.value == nil && unset.decodingFailure == nil)
    }

    @Test func laterChangeOfTheWrongTypeIsRecordedAndTheLastValueKept() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let writer = try await connectedClient(daemon, name: "writer")
        defer { client.close(); writer.close() }
        let channel = Channel("app", "level")
        try await writer.set(1, at: channel)
        let level = try await client.remoteValue(Int.self, at: channel)
        try await writer.set("eleven", at: channel)
        #expect(await eventually { level.decodingFailure != nil })
        #expect(level.current.value == 1 && level.current.rev == 1)
        try await writer.set(2, at: channel)
        #expect(await eventually { level.current.value == 2 })
        #expect(level.decodingFailure == nil)
    }

    @Test func typedSignalHandlersPassOtherKindsSilently() async throws {
        let daemon = try TestDaemon()
        let handlerSide = try await connectedClient(daemon, name: "handler")
        let sender = try await connectedClient(daemon, name: "sender")
        defer { handlerSide.close(); sender.close() }
        let errors = collectErrors(handlerSide)
        let saved = LockedValue<[Int]>([])
        let handler = try handlerSide.handle(SaveDocument.self) { save, _ in
            saved.withLock { $0.append(save.revision) }
            return .stop
        }
        try await handler.ready()
        let close = try await sender.signal(CloseDocument(force: true), timeout: .seconds(5)).result()
        #expect(!close.wasHandled)
        let save = try await sender.signal(SaveDocument(revision: 4), timeout: .seconds(5)).result()
        #expect(save.wasHandled)
        #expect(saved.value == [4])
        #expect(errors.value.isEmpty, "another kind is not an error: \(errors.value)")
        // A payload of its own kind that does not decode is still reported.
        _ = try await sender.signal(raw: RawJSON(#"{"kind":"save","revision":"four"}"#), on: SaveDocument.channel, timeout: .seconds(5)).result()
        #expect(await eventually { errors.value.count == 1 })
        if case .decoding? = errors.value.first {} else { Issue.record("got \(errors.value)") }
    }
}
