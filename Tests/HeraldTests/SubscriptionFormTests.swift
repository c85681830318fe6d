import Foundation
import Herald
import HeraldTestSupport
import Testing

@Suite struct SubscriptionFormTests {
    @Test func ownerFormEndsWhenTheOwnerIsDeallocated() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let calls = LockedValue(0)
        var owner: Owner? = Owner()
        weak let weakOwner = owner
        let token = try client.subscribe(ChatLine.topic, owner: try #require(owner), options: SubscriptionOptions(name: "owned")) { owner, line, _ in
            owner.received.withLock { $0.append(line.n) }
            calls.withLock { $0 += 1 }
        }
        try await token.ready()
        try await client.publish(ChatLine(text: "a", n: 1))
        #expect(await eventually { calls.value == 1 })
        owner = nil
        // The handler counted the event before it returned: the delivery may hold the owner
        // for the rest of that call, never longer.
        #expect(await eventually { weakOwner == nil }, "the subscription must not keep its owner alive")
        try await client.publish(ChatLine(text: "b", n: 2))
        try await drainOrdered(client)
        #expect(calls.value == 1, "no handler call after the owner is gone")
        #expect(!token.isActive)
        // The daemon is told too (at the next event or the next sweep).
        var names: [String] = ["owned"]
        for _ in 0..<50 where names.contains("owned") {
            names = try await client.serverSubscriptions().map(\.sub)
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(!names.contains("owned"))
    }

    @Test func releasingTheTokenUnsubscribes() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let calls = LockedValue(0)
        var token: Subscription? = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "temp")) { _, _ in
            calls.withLock { $0 += 1 }
        }
        try await token?.ready()
        #expect(try await client.serverSubscriptions().map(\.sub) == ["temp"])
        token = nil
        #expect(try await client.serverSubscriptions().isEmpty)
        try await client.publish(ChatLine(text: "x", n: 1))
        try await drainOrdered(client)
        #expect(calls.value == 0)
    }

    @Test func cancelStopsDeliveriesAlreadyQueued() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let calls = LockedValue(0)
        let gate = DispatchSemaphore(value: 0)
        let blocker = try client.subscribe(raw: Channel("block"), options: SubscriptionOptions(name: "blocker")) { _, _ in
            gate.wait()
        }
        let token = try client.subscribe(ChatLine.self) { _, _ in calls.withLock { $0 += 1 } }
        try await blocker.ready()
        try await token.ready()
        // The ordered queue is held by `blocker`, so the chat event waits in the queue.
        try await client.publish(raw: nil, to: Channel("block"))
        try await client.publish(ChatLine(text: "queued", n: 1))
        token.cancel()
        gate.signal()
        try await drainOrdered(client)
        #expect(calls.value == 0)
        blocker.cancel()
    }

    @Test func orderedDeliveryKeepsArrivalOrder() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let seen = LockedValue<[Int]>([])
        let lines = try client.subscribe(ChatLine.self) { line, _ in seen.withLock { $0.append(line.n) } }
        let cars = try client.subscribe(CarMoved.self) { moved, _ in seen.withLock { $0.append(moved.x) } }
        try await lines.ready()
        try await cars.ready()
        for n in 0..<300 {
            if n % 3 == 0 {
                try client.post(CarMoved(x: n), to: Car.moved(id: n % 7))
            } else {
                try client.post(ChatLine(text: "m", n: n))
            }
        }
        #expect(await eventually { seen.value.count == 300 })
        #expect(seen.value == Array(0..<300))
    }

    @Test func backgroundHandlersRunConcurrently() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let inside = LockedValue(0)
        let overlapped = LockedValue(0)
        let sub = try client.subscribe(ChatLine.self, options: SubscriptionOptions(delivery: .background)) { _, _ in
            inside.withLock { $0 += 1 }
            // Each handler waits (bounded) until the other is running too: only possible concurrently.
            let deadline = Date().addingTimeInterval(20)
            while inside.value < 2 && Date() < deadline { usleep(1_000) }
            if inside.value >= 2 { overlapped.withLock { $0 += 1 } }
        }
        try await sub.ready()
        try await client.publish(ChatLine(text: "a", n: 1))
        try await client.publish(ChatLine(text: "b", n: 2))
        #expect(await eventually(within: 30) { overlapped.value == 2 })
    }

    @Test func maxEndsTheSubscriptionAfterItsLastDelivery() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let seen = LockedValue<[(Int, Bool)]>([])
        let sub = try client.subscribe(ChatLine.self, options: SubscriptionOptions(max: 3)) { line, meta in
            seen.withLock { $0.append((line.n, meta.isLast)) }
        }
        try await sub.ready()
        for n in 1...5 { try await client.publish(ChatLine(text: "m", n: n)) }
        try await drainOrdered(client)
        #expect(seen.value.map(\.0) == [1, 2, 3])
        #expect(seen.value.map(\.1) == [false, false, true])
        #expect(!sub.isActive)
        #expect(try await client.serverSubscriptions().isEmpty)
    }

    @Test func onceDeliversOnce() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let count = LockedValue(0)
        let sub = try client.subscribe(ChatLine.self, options: .once) { _, _ in count.withLock { $0 += 1 } }
        try await sub.ready()
        try await client.publish(ChatLine(text: "1", n: 1))
        try await client.publish(ChatLine(text: "2", n: 2))
        try await drainOrdered(client)
        #expect(count.value == 1)
    }

    @Test func queueGroupSharesEventsBetweenClients() async throws {
        let daemon = try TestDaemon()
        let first = try await connectedClient(daemon, name: "w1")
        let second = try await connectedClient(daemon, name: "w2")
        defer { first.close(); second.close() }
        let counts = LockedValue([0, 0])
        let a = try first.subscribe(ChatLine.self, options: SubscriptionOptions(group: "workers")) { _, _ in counts.withLock { $0[0] += 1 } }
        let b = try second.subscribe(ChatLine.self, options: SubscriptionOptions(group: "workers")) { _, _ in counts.withLock { $0[1] += 1 } }
        try await a.ready()
        try await b.ready()
        for n in 0..<10 { try await first.publish(ChatLine(text: "job", n: n)) }
        #expect(await eventually { counts.value.reduce(0, +) == 10 })
        #expect(counts.value == [5, 5])
    }

    @Test func bindingAgainUnderTheSameNameReplacesTheHandler() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let seen = LockedValue<[String]>([])
        let old = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "view")) { _, _ in seen.withLock { $0.append("old") } }
        let new = try client.subscribe(ChatLine.self, options: SubscriptionOptions(name: "view")) { _, _ in seen.withLock { $0.append("new") } }
        try await new.ready()
        #expect(!old.isActive)
        try await client.publish(ChatLine(text: "x", n: 1))
        try await drainOrdered(client)
        #expect(seen.value == ["new"])
        old.cancel()  // releasing the replaced token must not end the new subscription
        #expect(new.isActive)
        #expect(try await client.serverSubscriptions().map(\.sub) == ["view"])
    }

    @Test func argsAreEchoedWithEachEvent() async throws {
        struct Row: Codable, Equatable { var row: Int }
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let rows = LockedValue<[Row?]>([])
        let sub = try client.subscribe(ChatLine.self, options: SubscriptionOptions(args: try RawJSON(encoding: Row(row: 2)))) { _, meta in
            rows.withLock { $0.append(try? meta.args(as: Row.self)) }
        }
        try await sub.ready()
        try await client.publish(ChatLine(text: "x", n: 1))
        #expect(await eventually { rows.value.count == 1 })
        #expect(rows.value == [Row(row: 2)])
    }

    @Test func streamDeliversTypedEventsAndEndsWithMax() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let stream = try client.events(ChatLine.self, options: SubscriptionOptions(max: 3))
        try await stream.subscription.ready()
        for n in 1...3 { try await client.publish(ChatLine(text: "s", n: n)) }
        var got: [Int] = []
        for await delivery in stream { got.append(delivery.event.n) }
        #expect(got == [1, 2, 3])
    }

    @Test func streamBufferReportsDrops() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let stream = try client.events(ChatLine.self, buffering: .oldest(2))
        try await stream.subscription.ready()
        // The receipt for our own publish is processed after the event, so after the loop all
        // five events were offered to the stream, which keeps two.
        for n in 1...5 { try await client.publish(ChatLine(text: "s", n: n)) }
        #expect(stream.droppedCount == 3)
        try await client.publish(ChatLine(text: "s", n: 6))  // dropped too: the buffer is still full
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.event.n == 1)
        #expect(await iterator.next()?.event.n == 2)
        try await client.publish(ChatLine(text: "s", n: 7))
        let next = await iterator.next()
        #expect(next?.event.n == 7)
        #expect(next?.metadata.dropped == 4)
    }

    @Test func streamKeepsArrivalOrderAcrossBatches() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let publisher = try await connectedClient(daemon, name: "publisher")
        defer { client.close(); publisher.close() }
        let count = 5000
        let stream = try client.events(ChatLine.self, options: SubscriptionOptions(max: count), buffering: .unbounded)
        try await stream.subscription.ready()
        // Fire-and-forget, so many events arrive per read and the consumer takes them in
        // batches of many, while it also waits for more now and then.
        let consumer = Task {
            var got: [Int] = []
            for await delivery in stream { got.append(delivery.event.n) }
            return got
        }
        for n in 1...count { try publisher.post(ChatLine(text: "b", n: n)) }
        let got = await consumer.value
        #expect(got == Array(1...count))
        #expect(stream.droppedCount == 0)
    }

    @Test func streamKeepingTheNewestReportsDropsOnTheFirstKept() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let stream = try client.events(ChatLine.self, buffering: .newest(2))
        try await stream.subscription.ready()
        for n in 1...5 { try await client.publish(ChatLine(text: "s", n: n)) }
        #expect(stream.droppedCount == 3)
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.event.n == 4)
        #expect(first?.metadata.dropped == 3)
        let second = await iterator.next()
        #expect(second?.event.n == 5)
        #expect(second?.metadata.dropped == 0)
    }

    @Test func cancellingAWaitingConsumerUnsubscribes() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        let stream = try client.events(ChatLine.self, options: SubscriptionOptions(name: "waiting"))
        try await stream.subscription.ready()
        let consumer = Task {
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        try await client.publish(ChatLine(text: "s", n: 1))
        try await Task.sleep(nanoseconds: 200_000_000)   // the consumer took it and waits again
        consumer.cancel()
        #expect(await consumer.value == 1)
        #expect(stream.subscription.endReason == .cancelled)
        #expect(try await client.serverSubscriptions().isEmpty)   // the unsub went out first
    }

    @Test func droppingTheStreamUnsubscribes() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        defer { client.close() }
        var stream: EventStream<ChatLine>? = try client.events(ChatLine.self, options: SubscriptionOptions(name: "st"))
        try await stream?.subscription.ready()
        #expect(try await client.serverSubscriptions().map(\.sub) == ["st"])
        stream = nil
        #expect(try await client.serverSubscriptions().isEmpty)
    }

    @Test func clientIsReleasedWithoutClose() async throws {
        let daemon = try TestDaemon()
        weak var weakClient: HeraldClient?
        let owner = Owner()
        do {
            let client = try await connectedClient(daemon)
            weakClient = client
            let token = try client.subscribe(ChatLine.self) { _, _ in _ = client }  // a handler may capture the client
            try client.subscribe(ChatLine.topic, owner: owner) { _, _, _ in }
            try await token.ready()
            token.cancel()
        }
        #expect(await eventually { weakClient == nil }, "no retain cycle between client, I/O thread and tokens")
        // The daemon sees the connection go.
        let probe = try await connectedClient(daemon)
        defer { probe.close() }
        var connections = 2
        for _ in 0..<50 where connections > 1 {
            connections = try await probe.stats()["connections"]
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(connections == 1)
    }

    @Test func closeFinishesStreamsAndFailsCalls() async throws {
        let daemon = try TestDaemon()
        let client = try await connectedClient(daemon)
        let stream = try client.events(ChatLine.self)
        try await stream.subscription.ready()
        client.close()
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
        await #expect(throws: HeraldClientError.closed) { try await client.ping() }
        #expect(client.connectionState == .disconnected(.closedByClient))
    }
}
