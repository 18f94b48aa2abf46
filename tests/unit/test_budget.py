"""awf_mcp.budget: client defaults, byte-exact cuts that never split a character, fit_result."""

from __future__ import annotations

import pytest

from awf_mcp import budget
from awf_mcp.ports import ToolContent, ToolResult


def test_known_clients_get_their_measured_default_and_others_the_safe_one() -> None:
    assert budget.budget_for_client("claude-code") == 40_000
    assert budget.budget_for_client("codex-mcp-client") == 10_000
    assert budget.budget_for_client("gemini-cli-mcp-client") == 32_000
    assert budget.budget_for_client("some-new-agent") == budget.DEFAULT_BUDGET
    assert budget.budget_for_client(None) == budget.DEFAULT_BUDGET


@pytest.mark.parametrize("cut", [budget.head, budget.tail])
def test_exactly_the_budget_is_kept_whole_and_one_more_byte_is_cut(cut) -> None:  # type: ignore[no-untyped-def]
    text = "a" * 100
    assert cut(text, 100) == text
    assert cut(text + "b", 100) == (text if cut is budget.head else "a" * 99 + "b")


@pytest.mark.parametrize("char", ["é", "€", "😀"])
def test_multibyte_characters_are_never_split_at_the_cut(char: str) -> None:
    text = char * 50
    width = len(char.encode())
    for limit in range(0, 60):
        kept_head = budget.head(text, limit)
        kept_tail = budget.tail(text, limit)
        assert kept_head == char * (limit // width)
        assert kept_tail == char * (limit // width)
        assert budget.size(kept_head) <= limit


def test_lone_surrogates_from_undecodable_names_count_and_survive() -> None:
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    assert budget.size(name) == 3 + 3 + 4
    assert budget.head(name, 5) == "caf"
    assert budget.head(name, 6) == name[:4]


def test_line_cuts_keep_whole_lines_unless_one_line_is_over_the_budget() -> None:
    text = "one\ntwo\nthree\n"
    assert budget.head_lines(text, 9) == "one\ntwo\n"
    assert budget.head_lines(text, len(text)) == text
    assert budget.tail_lines(text, 7) == "three\n"
    assert budget.tail_lines(text, 9) == "three\n"
    assert budget.tail_lines(text, 10) == "two\nthree\n"
    single = "x" * 50
    assert budget.head_lines(single, 10) == "x" * 10
    assert budget.tail_lines(single, 10) == "x" * 10


def test_head_and_tail_drop_the_middle_and_count_it() -> None:
    lines = [f"line {n}\n" for n in range(1000)]
    text = "".join(lines)
    first, last, omitted_lines, omitted_bytes = budget.head_and_tail(text, 800)
    assert text.startswith(first) and text.endswith(last)
    assert budget.size(first) + budget.size(last) <= 800
    assert size_of_middle(text, first, last) == omitted_bytes
    assert last.endswith("line 999\n") and first.startswith("line 0\n")
    assert omitted_lines == text.count("\n") - first.count("\n") - last.count("\n")
    assert budget.size(last) > budget.size(first)
    assert budget.head_and_tail("short", 800) == ("short", "", 0, 0)


def size_of_middle(text: str, first: str, last: str) -> int:
    return budget.size(text[len(first) : len(text) - len(last)])


def test_fit_result_leaves_a_result_within_budget_alone() -> None:
    result = ToolResult.text("x" * 1000)
    assert budget.fit_result(result, 1000) is result


def test_fit_result_cuts_text_at_a_line_and_says_so_within_the_budget() -> None:
    text = "".join(f"row {n}\n" for n in range(5000))
    fitted = budget.fit_result(ToolResult.text(text), 2000, how="use offset")
    texts = [item.text for item in fitted.content]
    assert sum(budget.size(t) for t in texts) <= 2000
    assert texts[0].endswith("\n") and text.startswith(texts[0])
    assert texts[-1].startswith("[awf-mcp: output cut to") and "use offset" in texts[-1]
    assert not fitted.is_error


def test_fit_result_keeps_images_and_the_error_flag() -> None:
    image = ToolContent(type="image", data="AAAA", mime_type="image/png")
    result = ToolResult(content=[ToolContent.of_text("y" * 5000), image], is_error=True)
    fitted = budget.fit_result(result, 1500)
    assert image in fitted.content and fitted.is_error


def test_structured_content_over_the_budget_becomes_an_error_that_says_why() -> None:
    result = ToolResult(content=[ToolContent.of_text("ok")], structured_content={"rows": ["z" * 5000]})
    fitted = budget.fit_result(result, 2000)
    assert fitted.is_error
    assert "structured content" in fitted.content[0].text and "2,000" in fitted.content[0].text


def test_every_field_of_every_item_counts_but_media_data() -> None:
    fat = "y" * 5000
    assert budget.content_size(ToolContent(type="text", text="ab", extra={"_meta": {"k": fat}})) > 5000
    assert budget.content_size(ToolContent.of_resource("file:///a", text=fat)) > 5000
    assert budget.content_size(ToolContent.of_resource("file:///a", blob=fat.encode())) > 5000
    assert budget.content_size(ToolContent(type="resource_link", uri="u", name=fat)) > 5000
    assert budget.content_size(ToolContent(type="image", data=fat, mime_type="image/png")) == 0


def test_items_that_are_not_plain_text_are_cut_or_left_out_with_one_note() -> None:
    fat = "".join(f"line {n}\n" for n in range(2000))
    result = ToolResult(
        content=[
            ToolContent(type="text", text="kept", extra={"_meta": {"fat": fat}}),
            ToolContent(type="resource_link", uri="file:///big", name="big", extra={"description": fat}),
            ToolContent.of_resource("file:///r.txt", text=fat, mime_type="text/plain"),
            ToolContent(type="image", data="AAAA", mime_type="image/png", extra={"annotations": {"x": fat}}),
        ]
    )
    fitted = budget.fit_result(result, 2000)
    kinds = [item.type for item in fitted.content]
    assert kinds == ["text", "resource", "image", "text"]
    assert sum(budget.content_size(item) for item in fitted.content) <= 2000
    assert fitted.content[0] == ToolContent.of_text("kept")
    resource = fitted.content[1]
    assert resource.uri == "file:///r.txt" and resource.mime_type == "text/plain"
    assert resource.text.endswith("\n") and fat.startswith(resource.text) and resource.text
    assert fitted.content[2] == ToolContent(type="image", data="AAAA", mime_type="image/png")
    last = fitted.content[-1].text
    assert last.startswith("[awf-mcp: output cut to") and "left out: 1 resource_link item" in last
    assert "dropped from 1 text item, 1 image item" in last


def test_a_text_item_with_non_ascii_text_keeps_its_extra_fields() -> None:
    item = ToolContent(type="text", text="caf\udce9", extra={"_meta": {"k": "v"}})
    fitted = budget.fit_result(ToolResult(content=[item]), 1000)
    assert fitted.content[0].extra == {"_meta": {"k": "v"}} and fitted.content[0].text == "caf\\xe9"
