import Foundation
import Testing
@testable import Homeserver

/// config.xml is read by our own strict reader (Foundation's XMLParser leaks and traps on Linux).
@Suite(.timeLimit(.minutes(15))) struct ConfigXMLReaderTests {
    func gui(_ xml: String) -> SyncthingConfigFile.GUI? { SyncthingConfigFile.parseGUI(Data(xml.utf8)) }

    @Test func entitiesCommentsCDATAAndSingleQuotesAreRead() {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- written by Syncthing -->
            <configuration version="37">
                <device id="X" name='a &amp; b'/>
                <gui enabled='true' tls="TRUE" debugging="false">
                    <address>127.0.0.1:8384</address>
                    <apikey>k&lt;e&#x79;&#33;<![CDATA[<raw>]]></apikey>
                    <theme>default</theme>
                </gui>
            </configuration>
            """
        #expect(gui(xml) == SyncthingConfigFile.GUI(enabled: true, tls: true, address: "127.0.0.1:8384", apiKey: "k<ey!<raw>"))
    }

    @Test func onlyTheGUIUnderConfigurationCounts() {
        #expect(gui("<configuration><folder><gui><address>x:1</address></gui></folder></configuration>") == nil)
        #expect(gui("<other><gui><address>x:1</address></gui></other>") == nil)
    }

    @Test func malformedDocumentsAreRefusedNotGuessed() {
        for bad in [
            "<configuration><gui><address>a:1</address></configuration>",           // mismatched end tag
            "<configuration><gui><address>a:1</address></gui>",                       // unclosed root
            "<configuration><gui/></configuration><configuration/>",                  // two roots
            "<!DOCTYPE c [<!ENTITY x 'y'>]><configuration><gui/></configuration>",   // DTD
            "<configuration><gui><apikey>&unknown;</apikey></gui></configuration>",   // unknown entity
            "<configuration><gui tls=\"true\" tls=\"false\"/></configuration>",       // duplicate attribute
            "<configuration><gui tls=true/></configuration>",                         // unquoted attribute
            "<configuration><gui><apikey>&#0;</apikey></gui></configuration>",        // NUL reference
            "text<configuration><gui/></configuration>",                             // text outside the root
            "<configuration><gui><!-- unterminated </gui></configuration>",
        ] {
            #expect(gui(bad) == nil, "\(bad)")
        }
    }

    @Test func aSelfClosingGUIKeepsItsAttributesAndEmptyValues() {
        #expect(gui("<configuration><gui enabled=\"false\" tls=\"false\"/></configuration>") == SyncthingConfigFile.GUI(enabled: false, tls: false, address: "", apiKey: ""))
    }

    @Test func anOversizedFileIsRefusedBeforeParsing() {
        let huge = "<configuration>" + String(repeating: " ", count: SyncthingConfigFile.maximumBytes) + "<gui/></configuration>"
        #expect(gui(huge) == nil)
    }
}
