"""Verifier rules, in the order of the Guardrails v1 spec."""

from dataclasses import replace

from core import reasons
from core.settings import VerifySettings
from core.text.citations import cited
from core.text.sentences import split_claims
from core.verify import critical_tokens, verify_answer
from core.verify.evidence import support_passage
from tests.unit.fakes import hit

CFG = VerifySettings()
HITS = [
    hit("The re-ingest command compares content hashes. Only changed documents are embedded again.", n=1),
    hit("The default port is 8443. Webhook mode needs a secret token set by the admin.", n=2),
]


def test_citations_parsed_in_all_forms() -> None:
    assert cited("a [C1] b [C2, C3] c [C4][C5] d [c6]") == [1, 2, 3, 4, 5, 6]


def test_boilerplate_and_lone_citations() -> None:
    claims = split_claims("According to the sources: hashes are compared [C1]. I hope this helps!\n[C2]")
    assert [c.text for c in claims] == ["hashes are compared."]
    assert claims[0].citations == (1, 2)


def test_a_cited_quote_without_a_full_stop_is_a_claim_of_its_own() -> None:
    claims = split_claims("Each id is claimed once (see below); [C1] When Slack retries, it answers once. [C2]")
    assert [(c.text, c.citations) for c in claims] == [("Each id is claimed once (see below);", (1,)),
                                                       ("When Slack retries, it answers once.", (2,))]


def test_supported_answer_passes_with_evidence_mapped() -> None:
    v = verify_answer("Only changed documents are embedded again [C1].", "What does re-ingest embed?", HITS, CFG)
    assert v.status == "PASS"
    assert v.supported_claims == v.total_claims == 1
    assert v.claim_map[0].evidence == ["Only changed documents are embedded again."]


def test_no_citations_refused_when_required() -> None:
    v = verify_answer("Only changed documents are embedded again.", "q", HITS, CFG)
    assert v.status == "REFUSE" and v.reasons == [reasons.MISSING_CITATIONS]


def test_no_citations_allowed_by_config_checks_all_chunks() -> None:
    cfg = replace(CFG, require_citations=False)
    v = verify_answer("Only changed documents are embedded again.", "q", HITS, cfg)
    assert v.status == "WARN"  # supported, but citation density is below the minimum
    assert reasons.MISSING_CITATIONS in v.reasons


def test_nonexistent_citation_is_invalid() -> None:
    v = verify_answer("Only changed documents are embedded again [C9].", "q", HITS, CFG)
    assert v.status == "REFUSE" and v.reasons == [reasons.INVALID_CITATIONS]


def test_number_absent_from_evidence_is_unsupported() -> None:
    v = verify_answer("The default port is 8080 [C2].", "What is the default port?", HITS, CFG)
    assert v.status == "REFUSE" and v.reasons == [reasons.UNSUPPORTED_CLAIMS]
    assert v.claim_map[0].missing == ["8080"]
    ok = verify_answer("The default port is 8443 [C2].", "What is the default port?", HITS, CFG)
    assert ok.status == "PASS"


def test_claim_citing_the_wrong_chunk_is_not_covered() -> None:
    v = verify_answer("The default port is 8443 [C1].", "What is the default port?", HITS, CFG)
    assert v.status == "REFUSE"


def test_unsupported_claims_are_left_out_however_many() -> None:
    base = "Only changed documents are embedded again [C1]. Webhook mode needs a secret token [C2]."
    pruned = verify_answer(base + " Slack is configured with YAML files [C1].", "q", HITS, CFG)
    assert pruned.status == "WARN" and reasons.UNSUPPORTED_CLAIMS in pruned.reasons
    assert pruned.uncovered_claims == pruned.removed_claims == ["Slack is configured with YAML files."]
    assert pruned.kept_answer == base
    whole = verify_answer(base, "q", HITS, CFG)
    assert whole.status == "PASS" and whole.kept_answer == "" and whole.removed_claims == []
    many = verify_answer(base + " Slack needs YAML [C1]. Teams need XML [C2]. Bots need JSON [C1].", "q", HITS, CFG)
    assert many.status == "WARN" and many.kept_answer == base
    assert many.removed_claims == ["Slack needs YAML.", "Teams need XML.", "Bots need JSON."]


def test_a_claim_that_cites_nothing_is_left_out_however_true() -> None:
    answer = "Only changed documents are embedded again [C1]. Webhook mode needs a secret token."
    v = verify_answer(answer, "Which documents are embedded again?", HITS, CFG)
    assert v.status == "WARN" and v.kept_answer == "Only changed documents are embedded again [C1]."
    assert v.removed_claims == ["Webhook mode needs a secret token."]
    assert "cites no source" in v.claim_map[1].missing


def test_what_is_left_after_pruning_must_still_be_about_the_question() -> None:
    answer = "Only changed documents are embedded again [C1]. Slack is configured with YAML files [C1]."
    v = verify_answer(answer, "How is Slack configured?", HITS, CFG)
    assert v.status == "REFUSE" and v.reasons == [reasons.UNSUPPORTED_CLAIMS]
    ok = verify_answer(answer, "Which documents are embedded again?", HITS, CFG)
    assert ok.status == "WARN" and ok.removed_claims == ["Slack is configured with YAML files."]


def test_short_answer_checked_with_its_question() -> None:
    assert verify_answer("8443 [C2]", "What is the default port?", HITS, CFG).status == "PASS"
    assert verify_answer("8080 [C2]", "What is the default port?", HITS, CFG).status == "REFUSE"


def test_empty_answer_refused() -> None:
    v = verify_answer("  ", "q", HITS, CFG)
    assert v.status == "REFUSE" and v.reasons == [reasons.UNSUPPORTED_CLAIMS]


def test_critical_tokens_numbers_and_names() -> None:
    assert critical_tokens("In 1998 Alice Smith moved to Paris.") == ["1998", "alice", "smith", "paris"]


def test_bare_yes_no_checked_with_its_question() -> None:
    cfg = replace(CFG, require_citations=False)
    ev = [hit("Dicksonia is a genus of tree ferns. Hardenbergia is a genus of vines from Australia.")]
    q = "Are Dicksonia and Hardenbergia in the same genus?"
    assert verify_answer("no", q, ev, cfg).status != "REFUSE"
    v = verify_answer("Yes.", "Are Dicksonia and Quoridor both genera?", ev, cfg)
    assert v.status == "REFUSE" and v.claim_map[0].missing == ["quoridor"]


def test_yes_or_no_in_a_sentence_of_nothing_else_is_checked_like_the_bare_word() -> None:
    cfg = replace(CFG, require_citations=False)
    ev = [hit("Dicksonia is a genus of tree ferns. Hardenbergia is a genus of vines from Australia.")]
    q = "Are Dicksonia and Hardenbergia in the same genus?"
    for form in ("No is the answer.", "The answer is no.", "No, they are not."):
        assert verify_answer(form, q, ev, cfg).status != "REFUSE", form
    v = verify_answer("Yes, they are.", "Are Dicksonia and Quoridor both genera?", ev, cfg)
    assert v.status == "REFUSE" and v.claim_map[0].missing == ["quoridor"]
    assert verify_answer("No, Hardenbergia is a genus of Andean trees.", q, ev, cfg).status == "REFUSE"


BAND = [hit("Falling in Reverse is an American rock band based in Las Vegas, Nevada. "
            "The band was formed in 2008 by Ronnie Radke.", n=1)]
ASK = replace(CFG, require_citations=False)


def test_a_negation_the_evidence_does_not_state_is_uncovered() -> None:
    q = "Where is Falling in Reverse based?"
    v = verify_answer("Falling in Reverse is not based in Nevada.", q, BAND, ASK)
    assert v.status == "REFUSE"
    assert "a negation its evidence does not state" in v.claim_map[0].missing
    assert verify_answer("Falling in Reverse is based in Las Vegas, Nevada.", q, BAND, ASK).status != "REFUSE"
    # a yes/no question may be answered "no" from positive evidence
    polar = verify_answer("No, the band was not formed by Ronnie Radke in 2008.", "Was the band formed in 2008?", BAND, ASK)
    assert "a negation its evidence does not state" not in polar.claim_map[0].missing
    # a request is not a yes/no question
    named = verify_answer("Ronnie Radke did not form the band.", "Name the founder of the band.", BAND, ASK)
    assert "a negation its evidence does not state" in named.claim_map[0].missing
    # the question's own negation word is its premise, not the claim's
    premise = verify_answer("The band formed in 2008 was never based outside Las Vegas.",
                            "Which band was never based outside Las Vegas?", BAND, ASK)
    assert "a negation its evidence does not state" not in premise.claim_map[0].missing


def test_a_restriction_the_evidence_does_not_state_is_uncovered() -> None:
    q = "Who formed Falling in Reverse?"
    v = verify_answer("Falling in Reverse was formed only by Ronnie Radke.", q, BAND, ASK)
    assert v.status == "REFUSE"
    assert any("only" in m for m in v.claim_map[0].missing)
    assert verify_answer("Falling in Reverse was formed by Ronnie Radke.", q, BAND, ASK).status != "REFUSE"


def test_a_name_of_several_words_must_be_written_together_in_the_evidence() -> None:
    ev = [hit("Stagger Lee is a play. It was developed with Southern Methodist University. "
              "The university is in University Park, Texas.", n=1)]
    q = "Stagger Lee was developed with the school of arts at what university?"
    v = verify_answer("Stagger Lee was developed with the University of Texas.", q, ev, ASK)
    assert v.status == "REFUSE" and "university of texas" in v.claim_map[0].missing
    ok = verify_answer("Stagger Lee was developed with Southern Methodist University.", q, ev, ASK)
    assert ok.status != "REFUSE"
    # with a claim judge the meaning is the judge's: the guard cost right claims there (guards.md)
    judge = ScriptedClaimJudge({"Stagger Lee was developed with the University of Texas.": 0.1})
    judged = verify_answer("Stagger Lee was developed with the University of Texas.", q, ev, ASK, judge, 0.3)
    assert judged.status == "REFUSE" and "university of texas" not in judged.claim_map[0].missing
    assert judge.read


class ScriptedClaimJudge:
    """A claim judge at the port: a fixed probability per claim text, and a log of what it read."""

    def __init__(self, probs: dict[str, float]) -> None:
        self.probs = probs
        self.read: list[tuple[str, str, str]] = []

    def score(self, question: str, claims: list[tuple[str, str]]) -> list[float]:
        self.read += [(question, c, e) for c, e in claims]
        return [self.probs.get(c, 0.0) for c, _ in claims]


def test_claim_judge_refuses_a_claim_every_word_check_passes() -> None:
    answer = "The default port is 8443 [C2]."
    judge = ScriptedClaimJudge({"The default port is 8443.": 0.1})
    v = verify_answer(answer, "Which port does polling mode use?", HITS, CFG, judge, 0.5)
    assert v.status == "REFUSE" and v.reasons == [reasons.UNSUPPORTED_CLAIMS]
    row = v.claim_map[0]
    assert row.judge == 0.1 and "claim judge 0.10 < 0.50" in row.missing[0]
    # it reads the title and the cited chunk's sentences that say most about the claim
    assert judge.read == [("Which port does polling mode use?", "The default port is 8443.",
                           f"{HITS[1].title}: The default port is 8443.")]
    assert verify_answer(answer, "Which port does polling mode use?", HITS, CFG).status == "PASS"


def test_claim_judge_accepts_a_paraphrase_word_overlap_does_not() -> None:
    answer = "Re-ingesting only embeds the documents that changed [C1]."
    question = "What does re-ingest embed?"
    assert verify_answer(answer, question, HITS, CFG).status == "REFUSE"  # too few shared words
    judge = ScriptedClaimJudge({"Re-ingesting only embeds the documents that changed.": 0.8})
    v = verify_answer(answer, question, HITS, CFG, judge, 0.1)
    assert v.status == "PASS" and v.supported_claims == 1
    assert "Only changed documents are embedded again." in judge.read[0][2]
    unsure = ScriptedClaimJudge({"Re-ingesting only embeds the documents that changed.": 0.3})
    assert verify_answer(answer, question, HITS, CFG, unsure, 0.1).status == "REFUSE"  # a paraphrase needs it sure


def test_support_passage_reads_the_sentences_that_state_a_claim_in_source_order() -> None:
    sentences = ["Sweet Frog is a chain of frozen yogurt stores.", "Derek Cha is the founder of Sweet Frog.",
                 "He opened the first store in Richmond in 2009.", "Cha founded it on Christian principles.",
                 "The name is an acronym for Fully Rely on God."]
    got = support_passage("The name stands for Fully Rely on God.", sentences, "Sweet Frog")
    assert got == "Sweet Frog: The name is an acronym for Fully Rely on God."
    merged = support_passage("Derek Cha founded Sweet Frog on Christian principles.", sentences, max_words=20)
    assert merged == "Derek Cha is the founder of Sweet Frog. Cha founded it on Christian principles."


def test_claim_judge_keeps_what_it_accepts_and_lexical_checks_still_apply() -> None:
    judge = ScriptedClaimJudge({"The port is 8443 by default.": 0.9, "The port is 8080 by default.": 0.9})
    ok = verify_answer("The port is 8443 by default [C2].", "What is the default port?", HITS, CFG, judge, 0.5)
    assert ok.status == "PASS" and ok.claim_map[0].judge == 0.9
    wrong = verify_answer("The port is 8080 by default [C2].", "What is the default port?", HITS, CFG, judge, 0.5)
    assert wrong.status == "REFUSE" and wrong.claim_map[0].missing[0] == "8080"


def test_a_source_sentence_copied_as_the_answer_is_not_put_to_the_judge() -> None:
    judge = ScriptedClaimJudge({"The default port is 8443.": 0.01, "The default port is 8080.": 0.01})
    copied = verify_answer("The default port is 8443 [C2].", "What is the default port?", HITS, CFG, judge, 0.5)
    assert copied.status == "PASS" and copied.claim_map[0].judge is None and judge.read == []
    # the same copy sharing too little of its question is judged (and refused, as above)
    elsewhere = verify_answer("The default port is 8443 [C2].", "Which port does polling mode use?", HITS, CFG, judge, 0.5)
    assert elsewhere.status == "REFUSE" and elsewhere.claim_map[0].judge == 0.01
    # one word changed is no copy: judged, and the exact checks still refuse the number
    swapped = verify_answer("The default port is 8080 [C2].", "What is the default port?", HITS, CFG, judge, 0.5)
    assert swapped.status == "REFUSE" and swapped.claim_map[0].judge == 0.01
    # a copy about little of its question, from a chunk the passage reader read as answering it
    read = [HITS[0], replace(HITS[1], answer_probability=0.8)]
    answering = verify_answer("The default port is 8443 [C2].", "Which port does polling mode use?", read, CFG, judge, 0.5)
    assert answering.status == "PASS" and answering.claim_map[0].judge is None
    doubted = [HITS[0], replace(HITS[1], answer_probability=0.2)]
    assert verify_answer("The default port is 8443 [C2].", "Which port does polling mode use?", doubted, CFG,
                         judge, 0.5).status == "REFUSE"
    # whole words only: "84" is not a copy of "8443"
    cut = verify_answer("The default port is 84 [C2].", "What is the default port?", HITS, CFG, judge, 0.5)
    assert cut.status == "REFUSE" and cut.claim_map[0].judge == 0.0


def test_a_copy_is_a_copy_however_its_source_was_tokenised_and_whatever_connective_opens_it() -> None:
    lake = [hit("Lake Kariba is the world 's largest man - made lake and reservoir by volume .", n=1)]
    q = "where is the world's largest man made lake"
    judge = ScriptedClaimJudge({})  # would say 0.0 to anything it were asked
    for answer in ("Lake Kariba is the world's largest man-made lake [C1].",
                   "Also, Lake Kariba is the world's largest man-made lake [C1]."):
        v = verify_answer(answer, q, lake, CFG, judge, 0.5)
        assert v.status == "PASS" and v.claim_map[0].judge is None, v.claim_map[0].missing
    # a connective inside the claim is still a word of it: no copy, judged (and refused)
    moved = verify_answer("Lake Kariba is also the world's largest man-made lake [C1].", q, lake, CFG, judge, 0.5)
    assert moved.status == "REFUSE" and moved.claim_map[0].judge == 0.0


def test_a_claim_whose_sources_the_reader_read_as_not_answering_is_not_delivered() -> None:
    on = CFG  # min_source_answer_probability 0.1
    q = "What is the default port?"
    unread = verify_answer("The default port is 8443 [C2].", q, HITS, on)
    assert unread.status == "PASS"  # a chunk the reader did not read does not count against it
    answers = [HITS[0], replace(HITS[1], answer_probability=0.6)]
    assert verify_answer("The default port is 8443 [C2].", q, answers, on).status == "PASS"
    elsewhere = [HITS[0], replace(HITS[1], answer_probability=0.05)]
    refused = verify_answer("The default port is 8443 [C2].", q, elsewhere, on)
    assert refused.status == "REFUSE" and "does not answer the question" in refused.claim_map[0].missing[0]
    off = replace(CFG, min_source_answer_probability=0.0)
    assert verify_answer("The default port is 8443 [C2].", q, elsewhere, off).status == "PASS"


ELVIS = [hit("It's Now or Never is a ballad recorded by Elvis Presley in 1960. The song was adapted from "
             "O Sole Mio. In 1949 Tony Martin sang an English version called There's No Tomorrow.", n=1)]


def test_a_number_of_the_passage_put_where_another_belongs_is_not_supported() -> None:
    q = "who sang it's now or never"
    right = verify_answer("It's Now or Never is a ballad recorded by Elvis Presley in 1960 [C1].", q, ELVIS, CFG)
    assert right.status == "PASS"
    swapped = verify_answer("It's Now or Never is a ballad recorded by Elvis Presley in 1949 [C1].", q, ELVIS, CFG)
    assert swapped.status == "REFUSE"
    assert "'1949' is in the sources, but not where they say" in swapped.claim_map[0].missing[0]
    off = verify_answer("It's Now or Never is a ballad recorded by Elvis Presley in 1949 [C1].", q, ELVIS,
                        replace(CFG, anchor_ratio=0.0))
    assert not any("1949" in m for m in off.claim_map[0].missing)


def test_a_name_the_question_asks_about_is_not_held_to_one_sentence() -> None:
    v = verify_answer("Tony Martin sang an English version in 1949 [C1].", "what did tony martin sing", ELVIS, CFG)
    assert v.status == "PASS"


def test_a_name_swapped_within_one_sentence_is_caught_by_its_neighbours() -> None:
    wall = [hit("The government opened the Wall in November 1989, weeks after the mass protests of the summer "
                "that had begun in August. "
                "Its demolition began in June 1990.", n=1)]
    q = "when did the berlin wall come down"
    assert verify_answer("The government opened the Wall in November 1989 [C1].", q, wall, CFG).status == "PASS"
    swapped = verify_answer("The government opened the Wall in August 1989 [C1].", q, wall, CFG)
    assert swapped.status == "REFUSE" and any("'august'" in m for m in swapped.claim_map[0].missing)


def test_a_bare_answer_the_evidence_lacks_is_not_taken_for_a_paraphrase() -> None:
    judge = ScriptedClaimJudge({"Texas.": 0.9})
    v = verify_answer("Texas [C1].", "In what state is the largest society?", HITS, CFG, judge, 0.1)
    assert v.status == "REFUSE"


FILE_TYPES = [hit("groundbot ingests Markdown (`.md`), plain text (`.txt`), HTML pages saved as files (`.html`, "
                  "`.htm`, one file or a folder of them), PDF files (`.pdf`), and FAQ files of question and answer "
                  "pairs in CSV, JSONL or YAML format.", n=1)]


def test_an_item_of_a_list_is_in_place_where_the_evidence_lists_it_otherwise() -> None:
    q = "Which file types can groundbot ingest?"
    claim = "groundbot ingests Markdown, plain text, HTML and PDF documents."
    judge = ScriptedClaimJudge({claim: 0.9})  # worded otherwise than its evidence: the judge decides
    v = verify_answer(claim[:-1] + " [C1].", q, FILE_TYPES, CFG, judge, 0.5)
    assert v.status == "PASS", v.claim_map[0].missing
    # a listed neighbour still has to share a sentence with the token: a list from elsewhere is not in place
    split = [hit("groundbot ingests HTML pages saved as files. The parser library also reads PDF files.", n=1)]
    far = verify_answer("groundbot ingests HTML and PDF files [C1].", q, split, CFG)
    assert any("'pdf'" in m for m in far.claim_map[0].missing)


def test_a_leading_no_is_the_answer_word_not_the_abbreviation_of_number() -> None:
    """"No. Martin has published five..." was one claim, "No." and all, which the judge read as
    false (0.03); "No. 5" still abbreviates "number"."""
    claims = split_claims("No. Martin has published five of a planned seven volumes [C1]. See No. 5 in the list [C1].")
    assert [c.text for c in claims] == ["Martin has published five of a planned seven volumes.", "See No. 5 in the list."]


def test_a_citation_glued_to_a_list_number_cites_the_item() -> None:
    """"1[C2]. Raise standards: ..." (a model citing the list's number) gave a claim "1." and an
    item without a citation, which is never delivered."""
    claims = split_claims("1[C2]. Raise standards for teachers. Train them [C3].\n2[C1]. Adapt to new tools [C1].")
    assert [(c.text, c.citations) for c in claims] == [
        ("Raise standards for teachers.", (2,)), ("Train them.", (3,)), ("Adapt to new tools.", (1,))]
