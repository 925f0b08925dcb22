"""The pure-Python index analyzer against SQLite's FTS5 itself: for every text, the
tokens `index_tokens` gives are the terms FTS5 indexes, in the same order, byte for byte."""

# The corpus is made of look-alike characters on purpose (full-width, mathematical, dashes).
# ruff: noqa: RUF001

from __future__ import annotations

import itertools
import random
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemodb.store.fts5_tokens import index_tokens, stem
from search.fts5_reference import (
    TABLES_MODULE,
    TOKENIZER,
    all_code_points,
    fts5_tokens,
    probe_characters,
    render_tables,
)


def as_fts5_bytes(tokens: list[str]) -> list[bytes]:
    # A term FTS5 cut in half mid-character carries its stray bytes as lone surrogates.
    return [token.encode("utf-8", "surrogateescape") for token in tokens]


def mismatches(texts: list[str]) -> list[tuple[str, list[bytes], list[bytes]]]:
    """(text, FTS5's terms, ours) for every text where the two differ."""
    expected = fts5_tokens(texts)
    return [
        (text, want, got)
        for text, want in zip(texts, expected, strict=True)
        if (got := as_fts5_bytes(index_tokens(text))) != want
    ]


CORPUS = [
    "I'm sure we'll meet again; don't worry, it isn't over. Y'all can't say they've won't-ed.",
    "The meeting moved from 3:30pm to 16:45 on 2024-07-15; budget $1,250.99 (≈ €1.150) — 12% over.",
    "State-of-the-art, well-known, e-mail, co-operate, re-entry and self-driving cars' long-term costs.",
    "See https://example.com/path?query=value&x=1#frag or mail first.last+tag@example.org today.",
    "Great work 🎉🚀! Thumbs up 👍🏽, family 👨‍👩‍👧, flags 🇫🇷🇯🇵, robot 🤖 and keycap 1️⃣.",
    "Crème brûlée, naïve café, façade, jalapeño, São Paulo, Zürich, Ångström, Øresund, Łódź, Dvořák.",
    "Ἀθῆναι καὶ ἡ Ἑλλάς· ΟΔΥΣΣΕΥΣ, ὀδυσσεύς, σοφία, ΣΟΦΊΑ, τελος.",
    "Москва — столица России. Ёлка, ЁЖИК, щука, Київ, Ґанок, Ђорђе, Љубљана.",
    "東京は日本の首都です。我爱北京天安门。한국어 문장도 있습니다. カタカナとひらがな。",
    "مرحبا بالعالم، هذه جملة عربية مع تشكيل: مُحَمَّدٌ. שלום עולם בעברית.",
    "Combining: e\u0301 a\u0300 o\u0308 n\u0303 u\u0306 c\u0327 i\u0307 a\u20dd z\u0305 x\u0338.",
    "Ligatures ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ Ĳ œ Æ ǅ ǈ ǋ ǲ, and ℌ ℍ ℕ ℙ ℚ ℝ ℤ ℬ ℰ.",
    "Full-width ＡＢＣ ａｂｃ １２３ ＨＥＬＬＯ，ｗｏｒｌｄ！ and half-width ｶﾀｶﾅ.",
    "Straße, STRASSE, strasse, Maß, MASSE, ẞ capital sharp s, Fußgänger, heißen.",
    "Turkish: İstanbul, ISTANBUL, ıspanak, Iğdır, DİYARBAKIR, kırmızı, şişe, çiçek.",
    "Roman numerals Ⅰ Ⅱ Ⅲ Ⅳ Ⅻ ⅰ ⅱ ⅻ Ⅽ Ⅾ Ⅿ; superscripts x² y³ zⁿ ¹²³ H₂O CO₂ ½ ¾ ⅓.",
    "Null\x00byte, tab\tnewline\nreturn\r\nvertical\x0bform\x0cfeed, NBSP\u00a0here, ZWSP\u200bthere.",
    "Private use \ue000\ue001 \U000f0000 and unassigned \u0378 \U0001fffe \U0010fffd code points.",
    "Math 𝐀𝐁𝐂 𝒜𝒷𝒸 𝔄𝔅 𝕬 𝟎𝟏𝟐, Deseret 𐐀𐐨, Gothic 𐌰𐌱, cuneiform 𒀀, Linear B 𐀀.",
    "Hyphen‐minus‒dash–en—em―bar ‘single’ “double” «guillemets» ‹angle› „low“ ‚quote‘ ′prime″.",
    "Running runners ran; the relational conditional rationale of generalizations is hopefully sensible.",
    "Caresses ponies ties caress cats feed agreed disabled matting mating meeting milling messing meetings.",
    "Ā ā Ǖ ǖ Ǹ ǹ Ḗ ḗ Ṩ ṩ Ỳ ỳ Ấ ấ Ặ ặ Ợ ợ Ự ự Ǻ ǻ Ǿ ǿ Ȁ ȁ Ȫ ȫ Ʉ ʉ Ꞧ ꞧ.",
    "Devanagari हिन्दी भाषा, Thai ภาษาไทย, Tamil தமிழ், Bengali বাংলা, Georgian ქართული Ⴀ, Armenian Հայերեն.",
    "Japanese iteration 々 〻, Korean jamo ᄀ ᅡ ᆨ, Mongolian ᠮᠣᠩᠭᠣᠯ, Ethiopic ሰላም, Cherokee ᏣᎳᎩ ꭰ.",
    "Currency $ € £ ¥ ₹ ₽ ₿ ¢, symbols © ® ™ ° § ¶ † ‡ • … ‰ ‱ ⁂ ※, arrows ← → ↑ ↓ ⇒ ⟹.",
    "Tokens joined_by_underscores, dotted.names.here, slash/separated/words, back\\slash, pipe|bar.",
    "a" * 70 + "ing " + "b" * 62 + "ation " + "ü" * 40 + "ed " + "x" * 200,
    "Words with digits: mp3s covid19 3rd 21st 2nd 1990s b2b x86_64 utf8 ipv6 h264 ed25519 4ever.",
    "Y words: yes yellow toy boy boys enjoying employed sky skies flying flyer fly yearly yy yying.",
]


def test_every_code_point_is_split_and_folded_as_fts5_does() -> None:
    """Each code point alone, inside a word, and tripled before a suffix porter strips:
    the separators, the folds, the dropped marks and how porter treats non-ASCII bytes."""
    texts = [f"ab{chr(cp)}ing {chr(cp)} {chr(cp) * 3}ed" for cp in all_code_points()]
    assert mismatches(texts) == []


def test_the_tables_are_what_sqlite_does_today() -> None:
    """The checked-in tables match this SQLite: a newer SQLite with other tables shows here."""
    assert TABLES_MODULE.read_text() == render_tables(probe_characters())


@pytest.mark.parametrize("paragraph", CORPUS)
def test_a_varied_corpus_gives_fts5s_tokens(paragraph: str) -> None:
    assert mismatches([paragraph, paragraph.upper(), paragraph.lower(), paragraph.title()]) == []


ENGLISH = """
    caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized
    hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational
    valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization
    predication operator feudalism decisiveness hopefulness callousness formaliti sensitiviti
    sensibiliti triplicate formative formalize electriciti electrical hopeful goodness revival
    allowance inference airliner gyroscopic adjustable defensible irritant replacement adjustment
    dependent adoption homologou communism activate angulariti homologous effective bowdlerize probate
    rate cease controll roll generalization oscillators archaeology apology analogy visibly possibly
    knowledge knowledgeable organization organizational organizer organizing nationalism nationality
    happiness business busy busily agreement disagreement cement ment element statement abatement
    conclusion confusion decision revision vision station adoption option onion lion million union
    communication dedication publication predicate syndicate abdicate locate allocate ate late mate
    generously gracefully beautifully dutifully skillfully wilfully cheerfulness mindfulness awfulness
    activities ability abilities possibility responsibility sensitivity relativity activity cavity
    running swimming stopping hoping hopping shining shinning filed filled fired fried dried dyed
    agreed freed seed speed needed bleed proceeded exceeded succeeded guaranteed refereed decreed
    lying dying tying eying eyeing saying playing enjoying buying flying crying drying trying
    studies studied studying flies flied tries tried cries cried skies dies died ties tied lies lied
    geese sees ease eases easy easily easier easiest ones bones tones zones quiz quizzes fizz buzz
    quickly slowly only early daily family reply replies supply supplied apply applied comply ally
    sing singer singing sings song songs sang sung ring rings ringing bring brings brought thing things
    national rational traditional additional emotional international intentional professional
    conditioning conditioned conditions condition conditionally unconditionally reconditioned
    electric electrical electricity electrician electrify electrified electrifying electronic
    generate generation generational generator generic generically general generally generalize
    a an as is us at it be by do go he me my no of on or so to up we ox ax is
    abbess abyss access across actress address albatross amiss bass bless boss brass canvass chess
    class compass cross dress excess express glass grass guess hiss impress kiss less lass loss mass
    mess miss moss pass press process profess progress success stress toss truss undress witness
    bus gas yes this his has was plus thus virus status bonus census focus genus minus onus
    feed seed need deed weed reed heed creed greed breed freed agreed decreed indeed exceed proceed
    bled fled sled shed shred sped wed bred fed led red bed ted ned ed
    """


def generated_porter_words() -> list[str]:
    """Every English-looking shape the porter steps distinguish: stems of many consonant /
    vowel patterns (short, long, ending in double consonants, cvc, y, e) joined with every
    suffix the steps strip or rewrite, and suffixes stacked two deep."""
    stems = [
        "", "a", "e", "y", "b", "s", "t", "ss", "at", "bl", "iz", "ab", "ho", "hop", "hopp", "fil", "fill",
        "tan", "tann", "fal", "fall", "fizz", "hiss", "bow", "box", "toy", "sky", "fly", "pla", "rel",
        "condit", "ration", "valen", "hesit", "digit", "conform", "radic", "differ", "vil", "analog",
        "vietnam", "predic", "oper", "feud", "decis", "hope", "callous", "formal", "sensit", "sensib",
        "tripl", "electr", "good", "reviv", "allow", "infer", "airlin", "gyroscop", "adjust", "defens",
        "irrit", "replac", "depend", "adopt", "homolog", "commun", "activ", "angular", "effect", "bowdler",
        "prob", "contr", "general", "oscill", "archaeo", "c", "rat", "cea", "agr", "plaster", "motor",
        "conflat", "troubl", "siz", "yy", "ey", "ay", "oy", "uy", "xyz", "qu", "str", "scr", "aa", "ee",
        "oo", "ll", "zz", "w", "x", "wh", "th", "sh", "ch", "ph", "gh", "ck", "mb", "ng", "nk", "rr",
    ]  # fmt: skip
    suffixes = [
        "", "s", "es", "sses", "ies", "ss", "eed", "ed", "ing", "y", "ational", "tional", "enci", "anci",
        "izer", "bli", "abli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism",
        "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "logi", "icate", "ative", "alize",
        "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement",
        "ment", "ent", "ion", "sion", "tion", "xion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "e",
        "le", "ll", "lle", "ated", "bled", "ized", "ying", "ly", "ies", "ied", "ier", "iest", "eer",
        "eeds", "edly", "ings", "ingly", "izing", "ization", "ably", "ibly", "ously", "ively", "fully",
    ]  # fmt: skip
    words = [stem_ + suffix for stem_, suffix in itertools.product(stems, suffixes)]
    words += [stem_ + first + second for stem_ in stems[::3] for first in suffixes for second in suffixes[::4]]
    # Random words over letters that matter to porter (vowels, y, w, x, l, s, z) and a few others.
    rng = random.Random(20261204)
    alphabet = "aeiouy" + "bcdglmnprstwxz"
    words += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 16))) for _ in range(60_000)]
    return words


def test_real_english_words_give_fts5s_stems() -> None:
    words = ENGLISH.split()
    assert mismatches(words) == []
    assert mismatches([" ".join(words)]) == []


def test_every_porter_word_shape_gives_fts5s_stem() -> None:
    words = generated_porter_words()
    assert len(words) > 100_000
    assert mismatches(words) == []


def test_stem_is_what_fts5_matches_a_query_term_with() -> None:
    """A query term stemmed by `stem` is the term FTS5 indexed for the same word."""
    words = [*ENGLISH.split(), "Café", "NAÏVE", "Straße", "ǅemal", "İyi", "ＲＵＮＮＩＮＧ", "Ⅻ"]
    assert [stem(word) for word in words] == [token for word in words for token in index_tokens(word)]
    with pytest.raises(ValueError):
        stem("two words")
    with pytest.raises(ValueError):
        stem("!?")


def test_fts5_matches_a_query_term_on_exactly_the_stem_stem_gives() -> None:
    """FTS5's own query side: a quoted term finds the documents that indexed `stem(term)`."""
    documents = [*ENGLISH.split(), "Café NAÏVE", "Straße ǅemal", "İyi ＲＵＮＮＩＮＧ Ⅻ", "ΟΔΥΣΣΕΥΣ ὀδυσσεύς"]
    queries = [*ENGLISH.split()[::3], "Café", "naive", "STRASSE", "straße", "ǆemal", "iyi", "running", "ⅻ", "οδυσσευς"]
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE doc USING fts5(body, tokenize = '{TOKENIZER}')")
    conn.executemany("INSERT INTO doc (rowid, body) VALUES (?, ?)", enumerate(documents, start=1))
    indexed = [set(index_tokens(document)) for document in documents]
    for query in queries:
        found = {rowid for (rowid,) in conn.execute("SELECT rowid FROM doc WHERE doc MATCH ?", (f'"{query}"',))}
        expected = {rowid for rowid, tokens in enumerate(indexed, start=1) if stem(query) in tokens}
        assert found == expected, query


# All of Unicode but the surrogates, which a Python str cannot carry to SQLite as UTF-8.
ANY_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=60)
# Mostly words porter has work to do on, with any character now and then.
WORDY_TEXT = st.lists(
    st.one_of(
        st.sampled_from(["ing", "ed", "ies", "sses", "ation", "y", "e", "ll", "ss", " ", "-", "'", "É", "ß"]),
        st.text("aeiouybcdlmnrstwxzAEIOUY ", min_size=1, max_size=8),
        st.characters(exclude_categories=["Cs"]),
    ),
    max_size=25,
).map("".join)


@settings(max_examples=3000, deadline=None)
@given(st.lists(ANY_TEXT, min_size=1, max_size=5))
def test_any_unicode_text_gives_fts5s_tokens(texts: list[str]) -> None:
    assert mismatches(texts) == []


@settings(max_examples=2000, deadline=None)
@given(st.lists(WORDY_TEXT, min_size=1, max_size=5))
def test_wordy_text_gives_fts5s_tokens(texts: list[str]) -> None:
    assert mismatches(texts) == []
