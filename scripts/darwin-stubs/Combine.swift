// Linux stand-ins (scripts/darwin-typecheck) for the Combine declarations HeraldClient+Combine.swift uses, written from
// Apple's documentation (signatures trimmed to the parameters used): only to type-check that file's logic on Linux.
public protocol Subscription {}
public enum Subscribers {
    public enum Completion<Failure: Error> { case finished, failure(Failure) }
    public struct Demand {}
}
public protocol Publisher<Output, Failure> {
    associatedtype Output
    associatedtype Failure: Error
}
public enum Publishers {
    public struct HandleEvents<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure
    }
}
extension Publisher {
    public func eraseToAnyPublisher() -> AnyPublisher<Output, Failure> { AnyPublisher() }
    public func handleEvents(receiveSubscription: ((any Subscription) -> Void)? = nil, receiveOutput: ((Output) -> Void)? = nil,
                             receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)? = nil, receiveCancel: (() -> Void)? = nil,
                             receiveRequest: ((Subscribers.Demand) -> Void)? = nil) -> Publishers.HandleEvents<Self> {
        Publishers.HandleEvents()
    }
}
public struct AnyPublisher<Output, Failure: Error>: Publisher {}
public struct Deferred<DeferredPublisher: Publisher>: Publisher {
    public typealias Output = DeferredPublisher.Output
    public typealias Failure = DeferredPublisher.Failure
    public init(createPublisher: @escaping () -> DeferredPublisher) {}
}
public struct Fail<Output, Failure: Error>: Publisher {
    public init(error: Failure) {}
}
public final class PassthroughSubject<Output, Failure: Error>: Publisher {
    public init() {}
    public func send(_ input: Output) {}
    public func send(completion: Subscribers.Completion<Failure>) {}
}
public final class CurrentValueSubject<Output, Failure: Error>: Publisher {
    public init(_ value: Output) {}
    public var value: Output { fatalError("stub") }
    public func send(_ input: Output) {}
    public func send(completion: Subscribers.Completion<Failure>) {}
}
