#if canImport(Combine)
import Combine

/// Combine publishers for events and mirrors, on Apple platforms (Linux has no Combine).
///
/// Each publisher subscribes when a subscriber attaches (`Deferred`) and unsubscribes when it
/// cancels; a subscription that ends on the daemon's side (its instance channel removed, a
/// permission revoked) finishes the publisher. Values are sent where the subscription's
/// handler runs (``SubscriptionOptions/delivery``): add `.receive(on:)` for another queue.
extension HeraldClient {
    /// The events of a topic, with their metadata, as a Combine publisher.
    /// - Parameters:
    ///   - topic: the channel or pattern, typed by its event.
    ///   - options: name, group, max, delivery, …; its `onEnd` is still called.
    /// - Returns: a publisher that fails with the subscription's error (`.badChannel`,
    ///   `.closed`, the daemon's refusal) and finishes when the subscription ends.
    public func publisher<Event: HeraldEvent>(
        for topic: Topic<Event>, options: SubscriptionOptions = SubscriptionOptions()
    ) -> AnyPublisher<(event: Event, metadata: EventMetadata), HeraldClientError> {
        Deferred { [self] () -> AnyPublisher<(event: Event, metadata: EventMetadata), HeraldClientError> in
            let subject = SendableSubject(PassthroughSubject<(event: Event, metadata: EventMetadata), HeraldClientError>())
            var options = options
            let appEnd = options.onEnd
            options.onEnd = { end in
                appEnd?(end)
                if case .refused(let error) = end {
                    subject.subject.send(completion: .failure(error))
                } else {
                    subject.subject.send(completion: .finished)
                }
            }
            do throws(HeraldClientError) {
                let token = try subscribe(topic, options: options) { event, metadata in
                    subject.subject.send((event: event, metadata: metadata))
                }
                return subject.subject.handleEvents(receiveCancel: { token.cancel() }).eraseToAnyPublisher()
            } catch {
                return Fail(error: error).eraseToAnyPublisher()
            }
        }.eraseToAnyPublisher()
    }
}

extension RemoteValue {
    /// The mirrored value and its `rev`, now and after every change, as a Combine publisher;
    /// cancelling it ends the observation.
    public var publisher: AnyPublisher<(value: Value?, rev: Int), Never> {
        Deferred { [self] () -> AnyPublisher<(value: Value?, rev: Int), Never> in
            let subject = SendableSubject(CurrentValueSubject<(value: Value?, rev: Int), Never>((current.value, current.rev)))
            let observation = observe(alertNow: false) { value, rev in subject.subject.send((value: value, rev: rev)) }
            return subject.subject.handleEvents(receiveCancel: { observation.cancel() }).eraseToAnyPublisher()
        }.eraseToAnyPublisher()
    }
}

extension RemoteList {
    /// The mirrored list and its `rev`, now and after every change, as a Combine publisher;
    /// cancelling it ends the observation.
    public var publisher: AnyPublisher<(elements: [Element], rev: Int), Never> {
        Deferred { [self] () -> AnyPublisher<(elements: [Element], rev: Int), Never> in
            let subject = SendableSubject(CurrentValueSubject<(elements: [Element], rev: Int), Never>((current.value ?? [], current.rev)))
            let observation = observe(alertNow: false) { elements, rev in subject.subject.send((elements: elements, rev: rev)) }
            return subject.subject.handleEvents(receiveCancel: { observation.cancel() }).eraseToAnyPublisher()
        }.eraseToAnyPublisher()
    }
}

/// A Combine subject handed to the client's handlers on other threads.
///
/// `@unchecked`: Combine's subjects serialise `send` themselves (documented as thread-safe).
final class SendableSubject<Subject>: @unchecked Sendable {
    let subject: Subject

    init(_ subject: Subject) {
        self.subject = subject
    }
}
#endif
