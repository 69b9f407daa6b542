"""ChatMemoryMessageHistory against a real local mode: LangChain conversations stored as turns
and read back in order by a new history object (a restarted process), RunnableWithMessageHistory
end to end, clear(), and what consolidation makes of the stored turns."""

from __future__ import annotations

import pytest
from chatmemory_client import ChatMemoryClient, NotFound, SessionEnded
from chatmemory_client.langchain import ChatMemoryMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
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
        ("In April, for the blossoms", "April is blossom season."),
        ("…", "Shall I suggest temples?"),
        ("Yes please", "Kiyomizu-dera and Fushimi Inari."),
        ("…", "…"),
    ]
    assert all(t.origin == "client" for t in turns)
    assert [t.pending for t in turns] == [False, True, False, False, False, False]


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
    session = client.create_session("LangChain")
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
    config = {"configurable": {"session_id": session.session_id}}
    chain.invoke({"input": "I moved to Porto last year"}, config=config)
    answer = chain.invoke({"input": "Where do I live?"}, config=config)
    assert answer.content == "You said: Where do I live?"
    assert seen == [2, 4]  # the system line, the history read back from the server, the input
    turns = list(client.list_turns(session.session_id))
    assert [(t.input, t.response) for t in turns] == [
        ("I moved to Porto last year", "You said: I moved to Porto last year"),
        ("Where do I live?", "You said: Where do I live?"),
    ]
    # Stored turns are memory like chat turns: consolidation draws the profile from them.
    client.end_session(session.session_id)
    world.poller.drain()
    assert client.get_session(session.session_id).status == "CONSOLIDATED"
    facts = client.search_records("where do I live", type="fact")
    assert any("Porto" in record.text for record in facts)


def test_clear_deletes_the_conversation_and_continues_in_a_new_session(world) -> None:
    client = ChatMemoryClient(world.url, user_id="gina")
    session = client.create_session("To clear")
    history = ChatMemoryMessageHistory(session.session_id, client=client)
    history.add_messages([HumanMessage("secret"), AIMessage("kept")])
    history.clear()
    assert history.session_id != session.session_id
    with pytest.raises(NotFound):
        client.get_session(session.session_id)
    assert client.get_session(history.session_id).name == "To clear"
    assert history.messages == []
    history.add_user_message("fresh start")
    assert history.messages == [HumanMessage("fresh start")]


def test_an_ended_session_continues_in_a_new_one_and_unknown_ones_are_not_found(world) -> None:
    client = ChatMemoryClient(world.url, user_id="hana")
    history = ChatMemoryMessageHistory(None, client=client)
    history.add_user_message("hello")
    ended = history.session_id
    client.end_session(ended)  # as the idle sweeper does while the user is away
    with pytest.raises(SessionEnded):
        client.store_turn(ended, "the API itself still refuses it")
    history.add_ai_message("welcome back")
    assert history.session_id != ended
    assert client.get_session(history.session_id).continued_from == ended
    assert [m.content for m in history.messages] == ["hello", "welcome back"]
    with pytest.raises(NotFound):
        ChatMemoryMessageHistory("no-such-session", client=client).messages  # noqa: B018
