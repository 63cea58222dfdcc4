from dataclasses import replace

from core import reasons
from core.generate.extractive import ExtractiveGenerator
from core.messages import Hit
from core.settings import ExtractiveSettings
from tests.unit.fakes import hit

GEN = ExtractiveGenerator(ExtractiveSettings())


def test_faq_match_returns_stored_answer_verbatim() -> None:
    faq = hit("How do I reset?", 0.9, kind="faq", faq_answer="Press the red button twice.")
    g = GEN.generate("How can I reset it?", [faq])
    assert g.text == "Press the red button twice. [C1]" and g.faq and not g.llm_called


def test_picks_answering_sentence_with_citation() -> None:
    hits = [hit("Groundbot is a bot. The webhook listens on port 8443. It has buttons.", 0.7, n=0),
            hit("Slack answers go in threads.", 0.5, n=1)]
    g = GEN.generate("Which port does the webhook listen on?", hits)
    assert g.text == "The webhook listens on port 8443. [C1]"


def test_nothing_relevant_gives_empty_answer() -> None:
    assert GEN.generate("zebra?", [hit("Slack answers go in threads.", 0.5)]).text == ""


def test_quotes_only_when_the_best_chunk_reaches_the_quote_floor() -> None:
    near_miss = [hit("The webhook listens on port 8443.", 0.40)]
    g = GEN.generate("Which port does the webhook listen on?", near_miss)
    assert g.text == "" and g.reason == reasons.LOW_CONFIDENCE and "0.40 < 0.45" in g.detail
    close = [hit("Webhooks are configured in config.toml.", 0.6, n=0), hit("The webhook listens on port 8443.", 0.40, n=1)]
    assert "port 8443. [C2]" in GEN.generate("Which port does the webhook listen on?", close).text


def test_faq_matched_despite_spelling_variants_but_not_another_question() -> None:
    doc = hit("Opening hours are posted at the entrance.", 0.6, n=0)
    faq = hit("ساعت کاری دفتر چیست؟", 0.55, n=1, kind="faq", faq_answer="از ۸ تا ۱۶.")
    g = GEN.generate("ساعات كاري دفتر چيست", [doc, faq])  # Arabic letters, one letter more
    assert g.faq and g.text == "از ۸ تا ۱۶. [C2]"
    other = hit("How do I reset my token?", 0.6, kind="faq", faq_answer="Run groundbot reset.")
    assert not GEN.generate("How do I reset my password?", [other]).faq


def test_a_name_or_version_the_chunks_do_not_hold_does_not_stop_a_quote() -> None:
    """A real question carries context (an error name, a version, another tool): whether the sources
    answer it is the reader's call in the gate stage, not the generator's word count."""
    hits = [hit("Create a Slack app and set its signing secret. Telegram needs a bot token from BotFather.", 0.7, n=1)]
    g = GEN.generate("I upgraded to 0.28 and got a TypeError: what does Telegram need?", hits)
    assert g.text.startswith("Telegram needs a bot token")


def test_an_faq_answer_is_quoted_only_when_its_entry_comes_first() -> None:
    """"Where does groundbot read its config from?" sat at 0.73 from the FAQ "What is groundbot?";
    the reader put the configuration section first, and that is what is quoted, not the FAQ."""
    section = replace(hit("groundbot reads config.toml from the current directory.", 0.8, n=0), answer_probability=0.89)
    faq = replace(hit("What is groundbot?", 0.73, n=1, kind="faq", faq_answer="groundbot is a chat bot."),
                  answer_probability=0.55)
    g = GEN.generate("Where does groundbot read its config from?", [section, faq])
    assert not g.faq and g.text == "groundbot reads config.toml from the current directory. [C1]"
    assert GEN.generate("What is groundbot, in short?", [replace(faq, similarity=0.88), section]).faq  # first, close
    assert not GEN.generate("What is groundbot, in short?", [faq, section]).faq  # first, but only near (0.73 < 0.85)


def test_a_paraphrased_heading_whose_section_shares_no_word_gets_the_sections_opening_sentences() -> None:
    """"In which cases does the verifier reject an answer?" under "When does the verifier refuse an
    answer?": no sentence shares the question's words, the reader read the section first and
    trusts it, and the question is close to its heading: its opening sentences are quoted."""
    body = "Citations to passages that were not retrieved are refused. Unstated claims are left out."
    section = replace(hit(body, 0.81, n=0, heading="When does the verifier refuse an answer?"),
                      heading_similarity=0.81, answer_probability=0.84)
    gen = ExtractiveGenerator(ExtractiveSettings(), trust=0.4)
    got = gen.generate("In which cases does the verifier reject an answer?", [section])
    assert got.text == ("Citations to passages that were not retrieved are refused. [C1] "
                        "Unstated claims are left out. [C1]")
    far = replace(section, heading_similarity=0.6)  # a question not close to its heading
    assert gen.generate("In which cases does the verifier reject an answer?", [far]).text == ""
    untrusted = replace(section, answer_probability=0.3)  # the reader does not trust it
    assert gen.generate("In which cases does the verifier reject an answer?", [untrusted]).text == ""
    unread = replace(section, answer_probability=None)  # no reader read it
    assert gen.generate("In which cases does the verifier reject an answer?", [unread]).text == ""


def test_a_long_question_is_not_diluted_by_its_length() -> None:
    """A question with what the asker tried and an error line shares a small part of its words with
    the sentence that answers: a sentence's share is counted against the question's rarest words."""
    chunks = [hit("Routes are matched in order. Use a path convertor to capture the rest of the path.", 0.6, n=0),
              hit("Mount an application under a prefix with Mount. Hosts route by the Host header.", 0.5, n=1),
              hit("Middleware wraps the application. Add it with the middleware argument.", 0.5, n=2)]
    asked = ("Since upgrading yesterday our deployment behind nginx with gunicorn workers and a docker compose "
             "stack keeps failing: every request through the reverse proxy returns 404 Not Found, the logs show "
             "nothing useful and restarting the containers changes nothing. How do I capture the rest of the path?")
    assert "path convertor" in GEN.generate(asked, chunks).text
    diluted = ExtractiveGenerator(ExtractiveSettings(ask_terms=100))  # every word of the question counted
    assert diluted.generate(asked, chunks).text == ""


def test_an_faq_answer_the_reader_does_not_trust_is_quoted_only_for_the_question_asked_as_written() -> None:
    """"When was groundbot first released?" sat at 0.80 from the FAQ "What is groundbot?", first
    in the reader's order though the reader gave it 0.28: its answer was quoted, and it does not say."""
    trusting = ExtractiveGenerator(ExtractiveSettings(faq_min_similarity=0.72), trust=0.4)  # a lower FAQ bar than minilm's
    faq = replace(hit("What is groundbot?", 0.80, n=0, kind="faq", faq_answer="groundbot is a chat bot."),
                  answer_probability=0.28)
    install = replace(hit("Install groundbot with pip.", 0.69, n=1), answer_probability=0.35)
    assert not trusting.generate("When was groundbot first released?", [faq, install]).faq
    assert trusting.generate("What is groundbot?", [replace(faq, similarity=0.9), install]).faq  # as written
    assert trusting.generate("What is groundbot, in short?", [replace(faq, answer_probability=0.5), install]).faq


def _read(h: Hit, probability: float, *, doc: str = "", heading: str = "", position: int | None = None) -> Hit:
    return replace(h, answer_probability=probability, doc_id=doc or h.doc_id, heading=heading or h.heading,
                   position=h.position if position is None else position)


READ = ExtractiveGenerator(ExtractiveSettings(), trust=0.4)


def test_the_answer_quotes_one_trusted_section_in_its_own_order() -> None:
    """Starlette's Requests page: the best-matching sentence stands in "Request Files"; a trusted
    paragraph of another section of the same page that shares some of the question's words is not
    quoted, and the section's two chunks are quoted in the page's order, not the reader's."""
    files_2 = hit("File upload items are represented as instances of starlette.datastructures.UploadFile.", 0.7, n=0)
    files_1 = hit("Request files are normally sent as multipart form data (multipart/form-data). Signature: "
                  "UploadFile(filename, file, size=None, headers=None).", 0.6, n=1)
    form = hit("Request form data is read with async with request.form() as form: you receive a form with "
               "file uploads and text input.", 0.6, n=2)
    hits = [_read(files_2, 0.9, doc="requests", heading="Request Files", position=8),
            _read(files_1, 0.7, doc="requests", heading="Request Files", position=7),
            _read(form, 0.8, doc="requests", heading="Body")]
    got = READ.generate("How are file upload items represented in a multipart form request?", hits).text
    assert "[C3]" not in got, got
    assert got.index("multipart form data") < got.index("UploadFile.") , got
    assert "starlette.datastructures.UploadFile. [C1]" in got


def test_a_subsection_is_part_of_its_section() -> None:
    """ts-node's troubleshooting page: "SyntaxError" and its subsection "Unsupported JavaScript
    syntax" are one section; "TSError" beside them is another."""
    syntax = _read(hit("Any error that is not a TSError is from node.js (e.g. SyntaxError), and cannot be fixed "
                       "by TypeScript or ts-node.", 0.7, n=0), 0.9, doc="troubleshooting",
                   heading="Common errors > SyntaxError", position=4)
    unsupported = _read(hit("Your version of node may not support all JavaScript syntax supported by TypeScript. "
                            "Upgrade node to fix the SyntaxError.", 0.6, n=1), 0.8, doc="troubleshooting",
                        heading="Common errors > SyntaxError > Unsupported JavaScript syntax", position=5)
    tserror = _read(hit("Type errors from the compiler are thrown as a TSError, not a SyntaxError from node.", 0.6, n=2),
                    0.7, doc="troubleshooting", heading="Common errors > TSError", position=3)
    got = READ.generate("Why does node throw a SyntaxError for TypeScript syntax and how do I fix it?",
                        [syntax, unsupported, tserror]).text
    assert "[C1]" in got and "[C2]" in got and "[C3]" not in got, got


def test_without_a_reader_sentences_come_from_every_chunk_as_before() -> None:
    hits = [hit("The webhook listens on port 8443.", 0.7, n=0), hit("The webhook secret is set in config.", 0.6, n=1)]
    got = GEN.generate("Which port does the webhook listen on and where is its secret set?", hits).text
    assert "[C1]" in got and "[C2]" in got


def test_a_sentence_carried_into_the_next_chunk_of_the_section_is_quoted_once() -> None:
    shared = "The lamp is changed every ninety days by the senior keeper."
    a = _read(hit(f"Keepers log the watch. {shared}", 0.7, n=0), 0.9, heading="Lamps", position=3)
    b = _read(hit(f"{shared} The old lamp is kept in the store.", 0.6, n=1), 0.8, heading="Lamps", position=4)
    got = READ.generate("How often is the lamp changed by the senior keeper?", [a, b]).text
    assert got.count("ninety days") == 1, got


def test_the_askers_error_line_is_not_quoted_back_as_the_answer() -> None:
    """ts-node's troubleshooting page names the error it explains; the asker pasted that error."""
    body = ("Error [ERR_REQUIRE_ESM]: Must use import to load ES Module. This error is thrown by node when a module "
            "is require()d, but node believes it should execute as native ESM. Use ts-node/esm or compile to "
            "CommonJS to load the module.")
    section = _read(hit(body, 0.7, n=0, heading="Common errors > ERR_REQUIRE_ESM"), 0.9)
    asked = ("I run ts-node src/index.ts and get Error [ERR_REQUIRE_ESM]: Must use import to load ES Module. "
             "How do I load the module?")
    got = READ.generate(asked, [section]).text
    assert "Must use import" not in got and "ts-node/esm" in got, got


def test_a_sentence_the_asker_wrote_is_not_the_answer() -> None:
    body = "The session cookie is signed with the secret key. Rotate the key to log every user out."
    section = _read(hit(body, 0.7, n=0), 0.9)
    asked = "The docs say the session cookie is signed with the secret key. How do I log every user out?"
    got = READ.generate(asked, [section]).text
    assert got == "Rotate the key to log every user out. [C1]", got


def test_a_bare_code_fragment_is_not_a_claim() -> None:
    body = ('You can configure a proxy for all requests with the mounts argument. '
            'proxy = httpx.Proxy("http://127.0.0.1:8081"), httpx.AsyncClient(mounts=mounts). '
            'If you are coming from Requests, httpx.Client() is what you can use instead of requests.Session().')
    section = _read(hit(body, 0.7, n=0), 0.9)
    got = READ.generate("How do I use a proxy for all requests with httpx.AsyncClient?", [section]).text
    assert "Proxy(" not in got and "configure a proxy" in got, got


def test_a_traceback_or_log_line_of_the_docs_is_not_quoted() -> None:
    body = ("Traceback (most recent call last): File \"app.py\", line 3. "
            "INFO: Uvicorn running on http://127.0.0.1:8000. "
            "The lifespan handler runs once before the app serves its first request.")
    section = _read(hit(body, 0.7, n=0), 0.9)
    got = READ.generate("When does the lifespan handler run before the app serves requests?", [section]).text
    assert got == "The lifespan handler runs once before the app serves its first request. [C1]", got
