from rag.indexing import indexed_text


def test_a_chunk_from_the_middle_keeps_its_subject() -> None:
    text = "Participants were randomised into two arms."
    assert indexed_text(title="Statins and stroke", heading_path=["Methods"], text=text) == (
        "Statins and stroke › Methods\n\n" + text
    )


def test_context_already_at_the_start_is_not_repeated() -> None:
    text = "Statins and stroke\n\nStatins lower LDL."
    assert indexed_text(title="Statins and stroke", heading_path=[], text=text) == text
    heading_first = "# Methods\n\nRandomised."
    assert indexed_text(title="", heading_path=["Methods"], text=heading_first) == heading_first
