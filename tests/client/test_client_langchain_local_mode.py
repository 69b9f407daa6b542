"""ChatMemoryMessageHistory against a real local mode: LangChain conversations stored as turns
and read back in order by a new history object (a restarted process), RunnableWithMessageHistory
end to end, clear(), and what consolidation makes of the stored turns."""

from __future__ import annotations

import pytest
from chatmemory_client import ChatMemoryClient, NotFound, PayloadTooLarge, SessionEnded
from chatmemory_client.langchain import ChatMemoryMessageHistory
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

pytestmark = pytest.mark.integration


def test_messages_round_trip_in_order_after_a_restart(world) -> None:
    history = ChatMemoryMessageHistory(None, base_url=world.url, user_id="dana")
    conversation: list[BaseMessage] = [
        AIMessage("Hello! What shall we plan?"),
        HumanMessage("A trip to Kyoto", id="h-1"),
        HumanMessage("In April, for the blossoms"),
        AIMessage("April is blossom season.", id="a-1"),
        AIMessage("Shall I suggest temples?"),
        HumanMessage("Yes please"),
    ]
    history.add_messages(conversation[:3])
    history.add_messages(conversation[3:5])
    history.add_messages(conversation[5:])
    history.add_ai_message("Kiyomizu-dera and Fushimi Inari.")
    history.add_messages([HumanMessage(" "), AIMessage("")])
    expected = [
        *conversation,
        AIMessage("Kiyomizu-dera and Fushimi Inari."),
        HumanMessage(" "),
        AIMessage(""),
    ]

    restarted = ChatMemoryMessageHistory(history.session_id, base_url=world.url, user_id="dana")
    assert restarted.messages == expected
    turns = list(restarted.client.list_turns(history.session_id))
    assert [(t.input, t.response) for t in turns] == [
        ("…", "Hello! What shall we plan?"),
        ("A trip to Kyoto", None),
        ("In April, for the blossoms", "April is blossom season.\n\nShall I suggest temples?"),
        ("Yes please", "Kiyomizu-dera and Fushimi Inari."),
        ("…", "…"),
    ]
    assert all(t.origin == "client" for t in turns)
    assert [t.pending for t in turns] == [False, True, False, False, False]


def test_a_history_reads_more_than_one_page(world) -> None:
    client = ChatMemoryClient(world.url, user_id="erin")
    history = ChatMemoryMessageHistory(None, client=client)
    many: list[BaseMessage] = []
    for n in range(105):
        many += [HumanMessage(f"question {n}"), AIMessage(f"answer {n}")]
    history.add_messages(many)
    assert ChatMemoryMessageHistory(history.session_id, client=client).messages == many


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_runnable_with_message_history_keeps_the_conversation_in_the_session(world) -> None:
    client = ChatMemoryClient(world.url, user_id="frank")
    seen: list[int] = []

    def model(prompt: PromptValue) -> AIMessage:
        messages = prompt.to_messages()
        seen.append(len(messages))
        return AIMessage(f"You said: {messages[-1].content}")

    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are brief."), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | RunnableLambda(model),
        lambda session_id: ChatMemoryMessageHistory(session_id, client=client),
        input_messages_key="input",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "frank-chat"}}
    chain.invoke({"input": "I moved to Porto last year"}, config=config)
    answer = chain.invoke({"input": "Where do I live?"}, config=config)
    assert answer.content == "You said: Where do I live?"
    assert seen == [2, 4]  # the system line, the history read back from the server, the input
    turns = list(client.list_turns("frank-chat"))
    assert [(t.input, t.response) for t in turns] == [
        ("I moved to Porto last year", "You said: I moved to Porto last year"),
        ("Where do I live?", "You said: Where do I live?"),
    ]
    # Stored turns are memory like chat turns: consolidation draws the profile from them.
    client.end_session("frank-chat")
    world.poller.drain()
    assert client.get_session("frank-chat").status == "CONSOLIDATED"
    facts = client.search_records("where do I live", type="fact")
    assert any("Porto" in record.text for record in facts)


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_a_chain_with_tool_calls_and_a_system_prompt_round_trips_through_an_ended_session(
    world,
) -> None:
    """Failed first: system and tool messages were not stored (a logged warning), tool calls
    and ids were lost, and after the session ended each invoke started a new session whose
    prompt never saw the conversation."""
    client = ChatMemoryClient(world.url, user_id="ivan")
    replies = iter(
        [
            AIMessage(
                "",
                id="ai-1",
                tool_calls=[{"name": "weather", "args": {"city": "Porto"}, "id": "call-1"}],
                response_metadata={"finish_reason": "tool_calls"},
            ),
            AIMessage("Sunny, 24 °C in Porto.", id="ai-2"),
            AIMessage("Tomorrow too.", id="ai-3"),
        ]
    )
    fake_model = GenericFakeChatModel(messages=replies)
    prompts: list[list[BaseMessage]] = []

    def model(prompt: PromptValue) -> BaseMessage:
        prompts.append(prompt.to_messages())
        return fake_model.invoke(prompt)

    chain = RunnableWithMessageHistory(
        ChatPromptTemplate.from_messages(
            [MessagesPlaceholder("history"), MessagesPlaceholder("input")]
        )
        | RunnableLambda(model),
        lambda session_id: ChatMemoryMessageHistory(session_id, client=client),
        input_messages_key="input",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "ivan-weather"}}
    first_input = [
        SystemMessage("You are a weather bot.", id="sys-1"),
        HumanMessage(
            [
                {"type": "text", "text": "Weather in Porto?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
            id="h-1",
            name="ivan",
        ),
    ]
    call = chain.invoke({"input": first_input}, config=config)
    result = ToolMessage("Sunny, 24 °C", tool_call_id="call-1", name="weather", id="t-1")
    answer = chain.invoke({"input": [result]}, config=config)
    first = client.get_session("ivan-weather")

    client.end_session("ivan-weather")  # as the idle sweeper does after 30 idle minutes
    world.poller.drain()
    later = HumanMessage("And tomorrow?", id="h-2")
    tomorrow = chain.invoke({"input": [later]}, config=config)

    everything = [*first_input, call, result, answer, later, tomorrow]
    assert call.tool_calls and call.tool_calls[0]["id"] == "call-1"
    # The model's last prompt held the whole conversation, across the continuation.
    assert prompts[-1] == [*first_input, call, result, answer, later]
    assert ChatMemoryMessageHistory("ivan-weather", client=client).messages == everything
    now = client.get_session("ivan-weather")
    assert now.session_id != first.session_id and now.continued_from == first.session_id
    assert client.get_session(first.session_id).status == "CONSOLIDATED"
    # What the memory pipeline reads: the human's text and the final answer.
    (turn,) = client.list_turns(first.session_id)
    assert (turn.input, turn.response) == ("Weather in Porto?", "Sunny, 24 °C in Porto.")


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_the_readmes_line_makes_a_chain_raise_what_the_api_refuses(world, monkeypatch) -> None:
    from langchain_core.tracers.root_listeners import RootListenersTracer

    client = ChatMemoryClient(world.url, user_id="jo")
    chain = RunnableWithMessageHistory(
        RunnableLambda(lambda messages: AIMessage("read it")),
        lambda session_id: ChatMemoryMessageHistory(session_id, client=client),
    )
    config = {"configurable": {"session_id": "jo-chat"}}
    too_long = [HumanMessage("x" * 32_001)]
    chain.invoke(too_long, config=config)  # LangChain's default: a logged warning only
    monkeypatch.setattr(RootListenersTracer, "raise_error", True)
    with pytest.raises(PayloadTooLarge):
        chain.invoke(too_long, config=config)
    assert ChatMemoryMessageHistory("jo-chat", client=client).messages == []


def test_clear_empties_the_conversation_under_the_same_id(world) -> None:
    client = ChatMemoryClient(world.url, user_id="gina")
    history = ChatMemoryMessageHistory("gina-chat", client=client, name="To clear")
    history.add_messages([HumanMessage("secret"), AIMessage("kept")])
    old = client.get_session("gina-chat").session_id
    history.clear()
    assert history.session_id == "gina-chat"
    with pytest.raises(NotFound):
        client.get_session(old)
    assert client.get_session("gina-chat").name == "To clear"
    assert ChatMemoryMessageHistory("gina-chat", client=client).messages == []
    history.add_user_message("fresh start")
    assert history.messages == [HumanMessage("fresh start")]


def test_a_service_session_id_that_ended_raises_and_unknown_ids_have_no_messages(world) -> None:
    client = ChatMemoryClient(world.url, user_id="hana")
    session = client.create_session()
    history = ChatMemoryMessageHistory(session.session_id, client=client)
    history.add_user_message("hello")
    client.end_session(session.session_id)
    with pytest.raises(SessionEnded):
        history.add_ai_message("welcome back")
    assert history.session_id == session.session_id
    assert ChatMemoryMessageHistory("no-such-session", client=client).messages == []
