import Testing
import HeraldWire

@Suite struct JSONArrayElementsTests {
    private func split(_ text: String) -> [String]? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { JSONArrayElements.elements(of: $0) }?.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func topLevelElementsAreSplitWithTheirBytesKept() {
        #expect(split(#"[1, "a,b" ,{"k":[1,2]}, [ ], null,"\"]"]"#)
            == ["1", #""a,b""#, #"{"k":[1,2]}"#, "[ ]", "null", #""\"]""#])
    }

    @Test func emptyArraysHaveNoElements() {
        #expect(split("[]") == [])
        #expect(split(" [ \n ] ") == [])
    }

    @Test(arguments: ["", "{}", "[1,]", "[,1]", "[1", "[1]]", "[[1]", "1", "[1] x", #"["a]"#])
    func brokenArraysAreRefused(text: String) {
        #expect(split(text) == nil, "\(text)")
    }
}
